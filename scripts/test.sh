#!/usr/bin/env bash
# Install everything, build, and run the whole test suite (CTest), then fuzz the parsers briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
TINFER_WERROR=1 ./scripts/build.sh
export TINFER_SHARED=${TINFER_SHARED:-$(cd .. && pwd)/shared}
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
./scripts/fuzz.sh "${FUZZ_SECONDS:-30}"

#!/usr/bin/env bash
# Configures and builds tinfer (Release, tests on) into build/. Extra arguments go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTINFER_TESTS=ON ${TINFER_WERROR:+-DTINFER_WERROR=ON} "$@" >/dev/null
cmake --build build -j"$JOBS"

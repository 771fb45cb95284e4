#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan into build-fuzz/ and runs each for N seconds
# (default 30) from its seed corpus. Any crash fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-30}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Release -DTINFER_FUZZ=ON -DTINFER_TESTS=OFF >/dev/null
targets=$(ls tests/fuzz/fuzz_*.cpp | xargs -n1 basename | sed 's/\.cpp$//')
cmake --build build-fuzz -j"$(nproc)" --target $targets
export TINFER_SHARED=${TINFER_SHARED:-$(cd .. && pwd)/shared}
for t in $targets; do
  corpus=tests/fuzz/corpus/${t#fuzz_}
  work=$(mktemp -d)
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
  echo "fuzz: $t for ${SECS}s"
  build-fuzz/tests/fuzz/$t -max_total_time="$SECS" -rss_limit_mb=2048 -max_len=65536 "$work" 2>&1 | tail -3
  rm -rf "$work"
done
echo "fuzz: no crashes"

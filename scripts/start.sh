#!/usr/bin/env bash
# The main job: install everything, build, obtain the default model and start tinfer on it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
exec build/tools/tinfer/tinfer chat -m models/SmolLM2-135M-Instruct.Q4_1.gguf "$@"

#!/usr/bin/env bash
# The main job: install everything, build, obtain the default model and serve it (OpenAI-compatible
# HTTP on 127.0.0.1:8080; extra arguments go to `tinfer serve`, e.g. --port 9000).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
exec build/tools/tinfer/tinfer serve -m models/SmolLM2-135M-Instruct.Q4_1.gguf "$@"

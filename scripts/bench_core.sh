#!/usr/bin/env bash
# The core-engine benchmarks of docs/BENCHMARKS.md: batch-1 prefill/decode on synthetic TinyLlama-1.1B
# (Q8_0, Q4_0), the default model and stories260K, each with the roofline measured in the same process,
# then a perplexity A/B of the fast path (int8 activations) on the default model. Results go to stdout.
# Needs a built tree (scripts/build.sh) and ~3 GB in $TMPDIR for the synthetic models.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${TINFER:-build/tools/tinfer/tinfer}
T=${TMPDIR:-/tmp}
REPEAT=${REPEAT:-5}
SHARED=${TINFER_SHARED:-../shared}
for type in q8_0 q4_0; do
  [ -s "$T/tinyllama-$type.gguf" ] || $B synth --like tinyllama-1.1b --type $type -o "$T/tinyllama-$type.gguf"
done
echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
for type in q8_0 q4_0; do
  echo "== tinyllama-1.1b $type"
  $B bench -m "$T/tinyllama-$type.gguf" --prompt 512 --gen 128 --repeat "$REPEAT" -t 2 --json
done
echo "== default model"
$B bench -m models/SmolLM2-135M-Instruct.Q4_1.gguf --prompt 512 --gen 128 --repeat "$REPEAT" -t 2 --json
echo "== stories260K"
$B bench -m "$SHARED/models/stories260K.gguf" --prompt 256 --gen 128 --repeat "$REPEAT" -t 2 --json

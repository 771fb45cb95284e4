#!/usr/bin/env bash
# Interleaved decode/prefill speed per weight type: tinfer bench vs llama.cpp's llama-bench, same GGUF, 2 threads.
# usage: scripts/bench_types.sh TINFER ROUNDS TYPE...   (files /tmp/bench/tl-TYPE.gguf, made by tinfer quantize; LB = llama-bench)
B=$1; R=$2; shift 2
LB=${LB:-/tmp/llsrc/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-bench}
for r in $(seq 1 $R); do
  for t in "$@"; do
    M=/tmp/bench/tl-$t.gguf
    P=512; [ "$t" = f16 ] && P=64
    $B bench -m $M --prompt $P --gen 64 --repeat 2 -t 2 --json 2>/dev/null | tail -1 | python3 -c "
import json,sys; d=json.load(sys.stdin); print('TINFER $t $r prefill %.1f decode %.1f read %.1f eff %.1f roof %.0f%%' % (d['prefill_tok_s'], d['decode_tok_s'], d['read_gbps'], d['decode_effective_gbps'], d['decode_roofline_pct']))"
    tg=$($LB -m $M -t 2 -p 0 -n 64 -d $P -r 2 -o json 2>/dev/null | python3 -c "import json,sys; print('%.1f' % json.load(sys.stdin)[0]['avg_ts'])")
    pp=$($LB -m $M -t 2 -p $P -n 0 -r 2 -o json 2>/dev/null | python3 -c "import json,sys; print('%.1f' % json.load(sys.stdin)[0]['avg_ts'])")
    echo "LLAMA $t $r prefill$P $pp decode $tg"
  done
done

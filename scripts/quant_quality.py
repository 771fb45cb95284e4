#!/usr/bin/env python3
"""Quality table of tinfer quantize: type x method, each scored against the source model with --eval
(dPPL, KLD, top-1 on the same windows). Prints a Markdown table and writes the rows as JSON.

  scripts/quant_quality.py --tinfer build/tools/tinfer/tinfer --model SRC.gguf --eval TEXT \
      --calib CALIB.txt --types q8_0,q4_0 --methods rtn,rtn+imatrix,gptq,awq [--eval-tokens 1000 --ctx 512] \
      [--quantize-arg '--clip' ...]

`rtn+imatrix` is importance-weighted RTN (rtn with --calib); the other methods calibrate on --calib too, so
every row sees the same calibration text (keep it disjoint from --eval)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(a, typ, method):
    out = os.path.join(a.tmp, f"q-{typ}-{method.replace('+', '_')}.gguf")
    cmd = [a.tinfer, "quantize", a.model, out, "--type", typ, "--method", "rtn" if method == "rtn+imatrix" else method,
           "--eval", a.eval, "--eval-tokens", str(a.eval_tokens), "--ctx", str(a.ctx), "-t", str(a.threads), "--json",
           "--calib-tokens", str(a.calib_tokens)]
    if method != "rtn":
        cmd += ["--calib", a.calib]
    for o in a.tensor_type:
        cmd += ["--tensor-type", o]
    for x in a.quantize_arg:
        cmd += x.split()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    os.remove(out)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tinfer", default="build/tools/tinfer/tinfer")
    ap.add_argument("--model", required=True)
    ap.add_argument("--eval", required=True)
    ap.add_argument("--calib", required=True)
    ap.add_argument("--types", default="q8_0,q4_0")
    ap.add_argument("--methods", default="rtn,rtn+imatrix,gptq,awq")
    ap.add_argument("--tensor-type", action="append", default=[])
    ap.add_argument("--quantize-arg", action="append", default=[],
                    help="extra tinfer quantize arguments for every row, e.g. '--clip' or '--first-token-weight 64'")
    ap.add_argument("--eval-tokens", type=int, default=1000)
    ap.add_argument("--calib-tokens", type=int, default=4096)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json-out")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        a.tmp = tmp
        print(f"model {a.model}; eval {a.eval_tokens} tokens of {a.eval} (ctx {a.ctx}); calibration {a.calib_tokens} "
              f"tokens of {a.calib}")
        print("| type | method | bits/weight (matrices) | PPL base | PPL | ΔPPL ± se | ΔPPL % | KLD mean | KLD P99 | top-1 | s |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for typ in a.types.split(","):
            for m in a.methods.split(","):
                if m == "smoothquant" and typ != "q8_0":
                    continue
                j = run(a, typ, m)
                e = j["eval"]
                rows.append({"type": typ, "method": m, "report": j})
                label = " ".join([m] + a.quantize_arg)
                print(f"| {typ} | {label} | {j['bpw_weights']:.3f} | {e['ppl_base']:.4f} | {e['ppl']:.4f} | "
                      f"{e['dppl']:+.4f} ± {e['dppl_se']:.4f} | {100 * e['dppl'] / e['ppl_base']:+.2f}% "
                      f"(ln ratio {100 * e['ln_ratio']:+.2f} ± {100 * e['ln_ratio_se']:.2f}%) | "
                      f"{e['kld_mean']:.5f} | {e['kld_p99']:.4f} | {100 * e['top1']:.1f}% | {j['seconds']['total']:.1f} |",
                      flush=True)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(rows, f)


if __name__ == "__main__":
    main()

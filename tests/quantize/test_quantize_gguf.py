#!/usr/bin/env python3
"""`tinfer quantize` end to end, checked with gguf-py (an implementation of GGUF independent of ours).

For every target type on stories260K (F32; rows of 64 and 172, so the K-quants fall back): each tensor's
type and shape against this file's own transcription of the recipe table (src/quantize/recipe.cpp), the
metadata (every source key, general.file_type, general.quantization_version), the dequantized values
against the F32 source, llama.cpp's own bytes for every tensor both tools give the same type
(data/llamacpp_stories260K.json, from gen_llamacpp_golden.py), and the report's sizes and bits per
weight against the file. Also: SmolLM2 (tied embedding, dim 576, Q4_1 source: a re-quantization), the
calibrated methods, --eval against `tinfer ppl --kld-base`, the progress lines, the refusals, and that
no output (nor temporary) is left after an error, an exception mid-file or SIGINT. Exit 77 (skipped,
visibly) when numpy/gguf or the stories260K fixture are absent.
"""
import atexit
import json
import os
import hashlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    from gguf import GGUFReader, quants
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e}")
    sys.exit(77)

BIN = os.environ.get("TINFER_BIN", "build/tools/tinfer/tinfer")
SHARED = os.environ.get("TINFER_SHARED") or os.environ.get("TINFER_SHARED_DEFAULT", "../shared")
SRC_DIR = os.environ.get("TINFER_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
MODEL = os.path.join(SHARED, "models/stories260K.gguf")
TEXT = os.path.join(SHARED, "corpus/tinystories-valid-head.txt")
SMOL = os.environ.get("TINFER_DEFAULT_MODEL") or os.path.join(SRC_DIR, "models/SmolLM2-135M-Instruct.Q4_1.gguf")
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data/llamacpp_stories260K.json")
for f in (MODEL, TEXT):
    if not os.path.exists(f):
        print(f"SKIP: fixture absent: {f}")
        sys.exit(77)

TMP = tempfile.mkdtemp(prefix="tinfer_quantize_")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)
failures = []
skipped = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def tmp(name):
    return os.path.join(TMP, name)


def quantize(*args, ok=True, env=None):
    r = subprocess.run([BIN, "quantize", *map(str, args)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, **(env or {})})
    if ok and r.returncode != 0:
        raise SystemExit(f"tinfer quantize {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}")
    return r


def last_json(r):
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---- the recipe, transcribed from the table in src/quantize/recipe.cpp ----
BLOCK = {"f32": 1, "f16": 1, "bf16": 1, "q8_0": 32, "q4_0": 32, "q4_1": 32, "q5_0": 32, "q5_1": 32,
         "q2_k": 256, "q3_k": 256, "q4_k": 256, "q5_k": 256, "q6_k": 256}
#        target: (head, embd, attn_v, attn_output, ffn_down edge, ffn_down other)
RECIPE = {"q2_k": ("q6_k", "q6_k", "q4_k", "q3_k", "q4_k", "q3_k"),
          "q3_k": ("q6_k", "q6_k", "q5_k", "q4_k", "q5_k", "q4_k"),
          "q4_k": ("q6_k", "q6_k", "q6_k", "q4_k", "q6_k", "q4_k"),
          "q5_k": ("q6_k", "q6_k", "q6_k", "q5_k", "q6_k", "q5_k"),
          "q6_k": ("q6_k",) * 6,
          "q4_0": ("q6_k", "q6_k", "q5_0", "q4_0", "q5_0", "q4_0"),
          "q4_1": ("q6_k", "q6_k", "q5_1", "q4_1", "q5_1", "q4_1"),
          "q5_0": ("q6_k", "q6_k", "q8_0", "q5_0", "q8_0", "q5_0"),
          "q5_1": ("q6_k", "q6_k", "q8_0", "q5_1", "q8_0", "q5_1"),
          "q8_0": ("q8_0",) * 6}
FALLBACK = {"q2_k": "q4_0", "q3_k": "q4_0", "q4_k": "q5_0", "q5_k": "q5_1", "q6_k": "q8_0"}
FTYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9, "q2_k": 10, "q3_k": 12,
         "q4_k": 15, "q5_k": 17, "q6_k": 18, "bf16": 32}
# Relative RMS error of the dequantized weights against the F32 source (stories260K), generous bounds.
MAX_REL_ERR = {"f32": 0, "f16": 1e-3, "bf16": 8e-3, "q8_0": 0.01, "q6_k": 0.03, "q5_0": 0.06, "q5_1": 0.06,
               "q5_k": 0.06, "q4_0": 0.12, "q4_1": 0.12, "q4_k": 0.12, "q3_k": 0.25, "q2_k": 0.45}


def expected_type(target, name, shape, n_layers, tied):
    if len(shape) < 2:
        return "f32"
    t = target
    if target in RECIPE:
        head, embd, v, o, down_edge, down = RECIPE[target]
        layer = int(name.split(".")[1]) if name.startswith("blk.") else -1
        e = max(1, n_layers // 8)
        if name == "output.weight" or (tied and name == "token_embd.weight"):
            t = head
        elif name == "token_embd.weight":
            t = embd
        elif name.endswith(".attn_v.weight"):
            t = v
        elif name.endswith(".attn_output.weight"):
            t = o
        elif name.endswith(".ffn_down.weight"):
            t = down_edge if (layer < e or layer >= n_layers - e) else down
    while shape[0] % BLOCK[t]:
        t = FALLBACK.get(t, "f16")
    return t


def type_name(t):
    return t.tensor_type.name.lower()


def field(reader, key):
    f = reader.fields.get(key)
    return None if f is None else f.contents()


def model_facts(reader):
    names = [t.name for t in reader.tensors]
    n_layers = 1 + max(int(n.split(".")[1]) for n in names if n.startswith("blk."))
    return n_layers, "output.weight" not in names


SRC = GGUFReader(MODEL)
SRC_T = {t.name: t for t in SRC.tensors}
N_LAYERS, TIED = model_facts(SRC)
GOLD = json.load(open(GOLDEN))["types"] if os.path.exists(GOLDEN) else {}


def check_file(target, path, report):
    out = GGUFReader(path)
    # Tensors: source order, shapes, the recipe's types.
    check([t.name for t in out.tensors] == [t.name for t in SRC.tensors], f"{target}: tensor order")
    byte_sum = elem_sum = mat_bytes = mat_elems = 0
    counts = {}
    same_as_llamacpp = 0
    for t in out.tensors:
        s = SRC_T[t.name]
        shape = [int(x) for x in t.shape]
        check(shape == [int(x) for x in s.shape], f"{target}: {t.name} shape {shape}")
        want = expected_type(target, t.name, shape, N_LAYERS, TIED)
        check(type_name(t) == want, f"{target}: {t.name} is {type_name(t)}, the recipe says {want}")
        counts[type_name(t)] = counts.get(type_name(t), 0) + 1
        byte_sum += int(t.n_bytes)
        elem_sum += int(t.n_elements)
        if len(shape) >= 2:
            mat_bytes += int(t.n_bytes)
            mat_elems += int(t.n_elements)
        # Values: gguf-py's dequantizer against the F32 source.
        x = np.asarray(s.data, dtype=np.float32).reshape(-1)
        y = quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(-1)
        rel = float(np.sqrt(np.mean((y - x) ** 2)) / max(1e-12, np.sqrt(np.mean(x ** 2))))
        check(rel <= MAX_REL_ERR[type_name(t)] + 1e-12,
              f"{target}: {t.name} ({type_name(t)}) relative RMS error {rel:.4g} > {MAX_REL_ERR[type_name(t)]}")
        # llama.cpp's quantizer gives the same bytes wherever it picks the same type.
        g = GOLD.get(target, {}).get(t.name)
        if g and g[0] == type_name(t):
            digest = hashlib.sha256(np.ascontiguousarray(t.data).tobytes()).hexdigest()[:16]
            check(digest == g[1], f"{target}: {t.name} ({g[0]}) differs from llama.cpp's bytes")
            same_as_llamacpp += 1
    if target in GOLD:
        print(f"{target}: {same_as_llamacpp} of {len(out.tensors)} tensors have llama.cpp's type, all with its bytes")
        check(same_as_llamacpp >= 16, f"{target}: only {same_as_llamacpp} tensors compared with llama.cpp")
    if target in ("q8_0", "q6_k", "f16", "bf16") and GOLD:  # the recipes coincide: every tensor matches
        check(all(GOLD[target][t.name][0] == type_name(t) for t in out.tensors), f"{target}: types differ from llama.cpp")
    # Metadata: every source key unchanged, then the file type and quantization version.
    for k in SRC.fields:
        if k.startswith("GGUF.") or k == "general.file_type":
            continue
        check(field(out, k) == field(SRC, k), f"{target}: metadata {k} changed")
    check(field(out, "general.file_type") == FTYPE[target], f"{target}: general.file_type {field(out, 'general.file_type')}")
    check(field(out, "general.quantization_version") == 2, f"{target}: general.quantization_version")
    # The report's arithmetic is the file's.
    check(report["file_bytes"] == os.path.getsize(path), f"{target}: file_bytes {report['file_bytes']}")
    check(report["data_bytes"] == byte_sum and report["weight_bytes"] == mat_bytes, f"{target}: data bytes")
    check(report["elements"] == elem_sum and report["weight_elements"] == mat_elems, f"{target}: elements")
    check(abs(report["bpw_all"] - 8 * byte_sum / elem_sum) < 1e-9, f"{target}: bpw_all {report['bpw_all']}")
    check(abs(report["bpw_weights"] - 8 * mat_bytes / mat_elems) < 1e-9, f"{target}: bpw_weights")
    check(abs(report["bpw_file"] - 8 * os.path.getsize(path) / elem_sum) < 1e-9, f"{target}: bpw_file")
    check(report["tensors_by_type"] == counts, f"{target}: tensors_by_type {report['tensors_by_type']} vs {counts}")
    check(report["file_type"] == FTYPE[target], f"{target}: report file_type")


# ---- every target type on stories260K ----
for target in ["q8_0", "q6_k", "q5_k", "q5_1", "q5_0", "q4_k", "q4_1", "q4_0", "q3_k", "q2_k", "f16", "bf16", "f32"]:
    path = tmp(f"s_{target}.gguf")
    r = quantize(MODEL, path, "--type", target, "--json", "-t", "2", ok=False)
    if r.returncode != 0 and "not available in this build" in r.stderr:
        skipped.append(target)
        print(f"SKIP {target}: {r.stderr.strip()}")
        continue
    check(r.returncode == 0, f"{target}: exit {r.returncode}: {r.stderr.strip()}")
    if r.returncode != 0:
        continue
    report = last_json(r)
    check_file(target, path, report)
    # One stderr line per fallback tensor, naming it and the row length.
    for t in report["tensors"]:
        if t["origin"] == "fallback":
            check(any(t["name"] in line and str(t["shape"][0]) in line for line in r.stderr.splitlines()),
                  f"{target}: no fallback line for {t['name']}")
    # Not a terminal: the progress bar prints one line per ~10%, each with tensors, MB, elapsed and ETA.
    prog = [line for line in r.stderr.splitlines() if "tensors" in line and "ETA" in line]
    check(2 <= len(prog) <= 12 and "48/48 tensors" in prog[-1], f"{target}: progress lines {prog}")

# ---- F16 / BF16 sources (the f16 / bf16 files written above): quantized as they are, not a re-quantization ----
for src_type in ("f16", "bf16"):
    src_path = tmp(f"s_{src_type}.gguf")
    if not os.path.exists(src_path):
        continue
    r = quantize(src_path, tmp(f"from_{src_type}.gguf"), "--type", "q8_0", "--json")
    rep = last_json(r)
    check(not rep["requantized"] and "re-quantization" not in r.stderr, f"{src_type} source flagged as a re-quantization")
    for t in GGUFReader(tmp(f"from_{src_type}.gguf")).tensors:
        want = expected_type("q8_0", t.name, [int(x) for x in t.shape], N_LAYERS, TIED)
        check(type_name(t) == want, f"from {src_type}: {t.name} is {type_name(t)}, expected {want}")
        x = np.asarray(SRC_T[t.name].data, dtype=np.float32).reshape(-1)
        y = quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(-1)
        rel = float(np.sqrt(np.mean((y - x) ** 2)) / max(1e-12, np.sqrt(np.mean(x ** 2))))
        check(rel <= MAX_REL_ERR["q8_0"] + MAX_REL_ERR[src_type], f"from {src_type}: {t.name} error {rel:.4g}")

# ---- overrides: later patterns win; a glob on the whole name, a substring otherwise ----
r = quantize(MODEL, tmp("ov.gguf"), "--type", "q8_0", "--tensor-type", "attn_v=f16", "--tensor-type", "blk.1.*=f32",
             "--tensor-type", "output.weight=bf16", "--json")
types = {t["name"]: t["type"] for t in last_json(r)["tensors"]}
check(types["blk.0.attn_v.weight"] == "f16" and types["blk.1.attn_v.weight"] == "f32"
      and types["blk.1.attn_q.weight"] == "f32" and types["output.weight"] == "bf16"
      and types["blk.2.attn_q.weight"] == "q8_0", f"overrides: {types}")
check({type_name(t) for t in GGUFReader(tmp("ov.gguf")).tensors if t.name.startswith("blk.1.")} == {"f32"},
      "overrides: file types of blk.1")

# ---- SmolLM2: tied embedding, rows of 576, a quantized source ----
if os.path.exists(SMOL):
    r = quantize(SMOL, tmp("smol.gguf"), "--type", "q4_k", "--dry-run", "--json")
    plan = last_json(r)["tensors"]
    n_layers = 1 + max(int(t["name"].split(".")[1]) for t in plan if t["name"].startswith("blk."))
    tied = not any(t["name"] == "output.weight" for t in plan)
    check(tied, "SmolLM2 ties its head to the embedding")
    for t in plan:
        want = expected_type("q4_k", t["name"], t["shape"], n_layers, tied)
        check(t["type"] == want, f"SmolLM2 q4_k: {t['name']} planned {t['type']}, the recipe says {want}")
    check(not os.path.exists(tmp("smol.gguf")), "--dry-run wrote a file")
    # The real K-quant mix (q4_k/q6_k on the rows of 1536, q5_0/q8_0 on those of 576) through the fast path.
    r = quantize(SMOL, tmp("smolk.gguf"), "--type", "q4_k", "--json", "-t", "2", "--eval",
                 os.path.join(SHARED, "corpus/wikitext-2-test.raw"), "--eval-tokens", "128", "--ctx", "128")
    rep = last_json(r)
    check({"q4_k", "q6_k", "q5_0", "q8_0"} <= set(rep["tensors_by_type"]), f"SmolLM2 q4_k mix: {rep['tensors_by_type']}")
    check(4.5 < rep["bpw_weights"] < 7.0, f"SmolLM2 q4_k bits per weight {rep['bpw_weights']}")
    ev = rep["eval"]
    check(ev["ppl"] < 1.5 * ev["ppl_base"] and ev["top1"] > 0.6 and ev["kld_mean"] > 0,
          f"SmolLM2 q4_k eval: ppl {ev['ppl_base']} -> {ev['ppl']}, top1 {ev['top1']}")
    r = quantize(SMOL, tmp("smol8.gguf"), "--type", "q8_0", "--json", "-t", "2")
    rep = last_json(r)
    check(rep["requantized"] and "re-quantization" in r.stderr, f"SmolLM2: re-quantization warning: {r.stderr[:300]}")
    out = GGUFReader(tmp("smol8.gguf"))
    check({type_name(t) for t in out.tensors if len(t.shape) >= 2} == {"q8_0"}, "SmolLM2 q8_0 types")
    check(field(out, "general.file_type") == 7, "SmolLM2 file type")
else:
    skipped.append("SmolLM2 (models/ absent)")

# ---- calibrated methods (small calibration to stay fast) ----
calib = tmp("calib.txt")
with open(TEXT, "rb") as f:
    f.seek(200000)
    open(calib, "wb").write(f.read(20000))
r = quantize(MODEL, tmp("imp.gguf"), "--type", "q4_0", "--tensor-type", "attn_v=q4_0", "--calib", calib,
             "--calib-tokens", "512", "--json", "-t", "2")
rep = last_json(r)
check(rep["method"] == "rtn (importance-weighted)" and rep["calibration"]["tokens"] == 512, f"rtn --calib: {rep['method']}")
check(any(t["how"] == "rtn+importance" for t in rep["tensors"]), "rtn --calib: no tensor used the importance")
for method in ["gptq", "awq", "awq+gptq"]:
    r = quantize(MODEL, tmp("m.gguf"), "--type", "q4_0", "--method", method, "--calib-tokens", "256", "--json", "-t", "2",
                 ok=False)
    check(r.returncode == 0, f"--method {method}: {r.stderr.strip()[-300:]}")
    if r.returncode == 0:
        rep = last_json(r)
        check("wikitext-2-test.raw from byte 600000" in rep["calibration"]["text"], f"{method}: default calibration")
        check(rep["calibration"]["tokens"] == 256, f"{method}: calibration tokens")
        check(method.startswith("awq") or not rep["folds"], f"{method}: folds {len(rep['folds'])}")
        check(any(t["how"] == "gptq" for t in rep["tensors"]) == method.endswith("gptq"), f"{method}: how")
        if method.startswith("awq"):  # the held-out choice: 512 tokens after the 256, both candidates scored
            h = rep.get("held_out") or {}
            check(h.get("tokens") == 512 and h.get("kept_awq") == (h.get("kld_awq", 1) <= h.get("kld_baseline", 0)),
                  f"{method}: held_out {h}")
            check(rep["method"] == (h.get("awq_method") if h.get("kept_awq") else h.get("baseline_method")),
                  f"{method}: the method written {rep['method']} vs {h}")
            check(len(rep["folds"]) > 0 if h.get("kept_awq") else not rep["folds"], f"{method}: folds after the choice")
        if method == "awq" and rep["method"].startswith("awq"):  # AWQ writes with the importance-weighted RTN it searched with
            check(rep["method"] == "awq + rtn (importance-weighted)", f"awq: method {rep['method']}")
            layer_hows = {t["how"] for t in rep["tensors"] if t["name"].startswith("blk.") and t["how"] != "convert"}
            check(layer_hows == {"rtn+importance"}, f"awq: the layers' matrices written by {layer_hows}")
# --held-out-tokens 0: AWQ as searched, no choice, its folds reported.
r = quantize(MODEL, tmp("m.gguf"), "--type", "q4_0", "--method", "awq", "--calib-tokens", "256", "--held-out-tokens",
             "0", "--json", "-t", "2", ok=False)
check(r.returncode == 0 and "held_out" not in last_json(r) and last_json(r)["folds"] and
      last_json(r)["method"] == "awq + rtn (importance-weighted)", f"--held-out-tokens 0: {r.stderr.strip()[-300:]}")
r = quantize(MODEL, tmp("sq.gguf"), "--type", "q8_0", "--method", "smoothquant", "--calib-tokens", "256", "--json",
             "-t", "2", ok=False)
check(r.returncode == 0 and last_json(r)["method"] == "smoothquant + rtn", f"smoothquant: {r.stderr.strip()[-300:]}")

# ---- --eval: the same numbers as tinfer ppl --kld-base ----
# quantize --eval scores both models with an f32 cache (it measures the weights alone); ppl's default cache is
# f16, so the ppl runs it is checked against name f32.
r = quantize(MODEL, tmp("ev.gguf"), "--type", "q8_0", "--eval", TEXT, "--eval-tokens", "300", "--ctx", "128", "--json",
             "-t", "2")
ev = last_json(r)["eval"]
subprocess.run([BIN, "ppl", "-m", MODEL, "-f", TEXT, "--max-tokens", "300", "--ctx", "128", "-t", "2", "--kv-dtype", "f32",
                "--save-logits", tmp("base.tkld")], check=True, capture_output=True, timeout=120)
p = subprocess.run([BIN, "ppl", "-m", tmp("ev.gguf"), "--kld-base", tmp("base.tkld"), "--json", "-t", "2",
                    "--kv-dtype", "f32"],
                   check=True, capture_output=True, text=True, timeout=120)
pj = json.loads(p.stdout.strip().splitlines()[-1])
check(ev["tokens"] == pj["tokens"] == 300 and ev["ctx"] == pj["ctx"] and ev["stride"] == pj["stride"], "eval windows")
for k in ("ppl_base", "ppl", "dppl", "dppl_se", "top1"):
    check(abs(ev[k] - pj[k]) <= 1e-9 * max(1, abs(pj[k])), f"eval {k}: quantize {ev[k]} vs ppl {pj[k]}")
for k in ("kld_mean", "kld_p99"):  # the base file stores log-probabilities at 2^-11 nats
    check(abs(ev[k] - pj[k]) <= 2e-4 + 0.02 * pj[k], f"eval {k}: quantize {ev[k]} vs ppl {pj[k]}")
check(ev["ppl"] < ev["ppl_base"] * 1.02, f"q8_0 eval: ppl {ev['ppl']} vs base {ev['ppl_base']}")
r = quantize(MODEL, tmp("ev4.gguf"), "--type", "q4_k", "--eval", TEXT, "--eval-tokens", "300", "--ctx", "128", "--json")
ev = last_json(r)["eval"]
check(ev["ppl_base"] < ev["ppl"] < 1.3 * ev["ppl_base"] or abs(ev["dppl"]) < 3 * ev["dppl_se"],
      f"q4_k eval: ppl {ev['ppl_base']} -> {ev['ppl']}")
check(ev["kld_mean"] > 0.001 and ev["top1"] > 0.8, f"q4_k eval: kld {ev['kld_mean']} top1 {ev['top1']}")
r = quantize(MODEL, tmp("ev2.gguf"), "--type", "q8_0", "--eval", TEXT, "--eval-tokens", "100", "--ctx", "64")
check("PPL quant" in r.stdout and "ΔPPL" in r.stdout and "KLD" in r.stdout and "same top token" in r.stdout,
      f"eval report: {r.stdout}")

# ---- refusals: exit 1, one clear line, nothing written ----
before = set(os.listdir(TMP))
empty = tmp("empty.txt")
open(empty, "w").close()
os.makedirs(tmp("adir"), exist_ok=True)
bad = tmp("bad.gguf")
open(bad, "wb").write(b"GGUF\x03\x00\x00\x00garbage")
before = set(os.listdir(TMP))
cases = [
    (["--type", "q9_0"], "unknown type 'q9_0'"),
    (["--type", "q8_0", "--tensor-type", "attn_v=q7"], "unknown type 'q7'"),
    (["--type", "q8_0", "--tensor-type", "attn_v"], "expected PATTERN=TYPE"),
    (["--type", "q8_0", "--tensor-type", "ffn_down=q8_0"], "blk.0.ffn_down.weight' has rows of 172"),
    (["--type", "q8_0", "--tensor-type", "attn_q=q4_k"], "not a multiple of q4_k's block of 256"),
    (["--type", "q8_0", "--method", "magic"], "unknown --method 'magic'"),
    (["--type", "q4_0", "--method", "smoothquant"], "needs --type q8_0"),
    (["--type", "q8_0", "--calib", tmp("no_such.txt")], "cannot read calibration file"),
    (["--type", "q8_0", "--calib", empty], "is empty"),
    (["--type", "q8_0", "--eval", tmp("no_such.txt")], "cannot read"),
    (["--type", "q4_0", "--held-out-tokens", "64"], "--held-out-tokens needs --method awq or awq+gptq"),
    (["--type", "q4_0", "--method", "awq", "--held-out-tokens", "1"], "--held-out-tokens must be 0 or at least 2"),
    ([], "missing --type"),
]
for extra, needle in cases:
    r = quantize(MODEL, tmp("refused.gguf"), *extra, ok=False)
    check(r.returncode == 1 and needle in r.stderr, f"{extra}: expected exit 1 and '{needle}', got {r.returncode}: {r.stderr.strip()}")
for args, needle in [([tmp("no_such.gguf"), tmp("o.gguf")], "does not exist"),
                     ([bad, tmp("o.gguf")], "bad.gguf"),
                     ([MODEL, tmp("no_dir/o.gguf")], "directory"),
                     ([MODEL, tmp("adir")], "is a directory"),
                     ([MODEL, MODEL], "is the input file"),
                     ([MODEL], "expected IN and OUT")]:
    r = quantize(*args, "--type", "q8_0", ok=False)
    check(r.returncode == 1 and needle in r.stderr, f"{args}: expected exit 1 and '{needle}', got {r.returncode}: {r.stderr.strip()}")
check(set(os.listdir(TMP)) == before, f"refusals left files: {set(os.listdir(TMP)) - before}")

# ---- no partial output: an error mid-file, and SIGINT while writing ----
r = quantize(MODEL, tmp("fail.gguf"), "--type", "q8_0", ok=False, env={"TINFER_QUANTIZE_TEST_HOOK": "fail-after:10"})
check(r.returncode == 1 and "test hook" in r.stderr, f"fail-after: {r.returncode} {r.stderr.strip()}")
check(set(os.listdir(TMP)) == before, f"an error mid-file left {set(os.listdir(TMP)) - before}")
proc = subprocess.Popen([BIN, "quantize", MODEL, tmp("int.gguf"), "--type", "q8_0"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, env={**os.environ, "TINFER_QUANTIZE_TEST_HOOK": "sleep-after:5:20000"})
deadline = time.time() + 30
while time.time() < deadline and not any(n.startswith("int.gguf.tmp-") for n in os.listdir(TMP)):
    time.sleep(0.02)
check(any(n.startswith("int.gguf.tmp-") for n in os.listdir(TMP)), "the temporary never appeared")
time.sleep(0.2)
proc.send_signal(signal.SIGINT)
rc = proc.wait(timeout=30)
check(rc == -signal.SIGINT, f"SIGINT: exit {rc}")
check(set(os.listdir(TMP)) == before, f"SIGINT left {set(os.listdir(TMP)) - before}")

if skipped:
    print("skipped (visibly):", ", ".join(skipped))
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all quantize checks passed")

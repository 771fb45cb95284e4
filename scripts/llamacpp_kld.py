#!/usr/bin/env python3
"""llama.cpp's fidelity on the same tokens as a tinfer base run: KL divergence, top-1 agreement and dPPL of
llama.cpp's logits (through the llama-cpp-python package from PyPI) against a `tinfer ppl --save-logits` file,
typically the fp64 reference forward, so "as exact as the peers" is a number. A benchmark script, not a test:
llama-cpp-python builds llama.cpp from source (minutes), so it lives in its own venv, never in CI.

    python3 -m venv /tmp/llvenv && /tmp/llvenv/bin/pip install numpy llama-cpp-python
    tinfer ppl -m MODEL -f TEXT --max-tokens 1000 --ctx 512 --reference --save-logits ref.tkld
    /tmp/llvenv/bin/python scripts/llamacpp_kld.py MODEL ref.tkld [--threads 2]

The file is decoded by its documented layout (tools/tinfer/quality/logits_file.h); windows follow the file's ctx and
stride, so llama.cpp sees exactly the contexts tinfer saw.
"""
import argparse
import struct

import numpy as np
from llama_cpp import Llama

STEP = 1.0 / 2048  # nats per stored uint16 step below the row's maximum


def read_base(path):
    b = open(path, "rb").read()
    if b[:8] != b"TINFKLD\0":
        raise SystemExit("%s: not a tinfer logits file" % path)
    (version, width, n_vocab, bos, eos, vhash, ctx, stride, n_tok, n_rec, label_len) = struct.unpack_from(
        "<IIIiiQIIQQI", b, 8)
    if version != 1:
        raise SystemExit("%s: version %d, this script reads 1" % (path, version))
    off = 64 + label_len
    tokens = np.frombuffer(b, "<i4", n_tok, off)
    off += 4 * n_tok
    rec = np.dtype([("target", "<u4"), ("argmax", "<i4"), ("max_logp", "<f4"), ("nll", "<f8"), ("q", "<u2", (width,))])
    recs = np.frombuffer(b, rec, n_rec, off)
    return dict(ctx=ctx, stride=stride, tokens=tokens, recs=recs, label=b[64:64 + label_len].decode())


def windows(n, ctx, stride):
    """(begin, end, first_target) of Hugging Face's strided schedule, as tinfer ppl scores it."""
    out, prev_end = [], 0
    for begin in range(0, n, stride):
        end = min(begin + ctx, n)
        out.append((begin, end, max(prev_end, begin + 1)))
        prev_end = end
        if end == n:
            break
    return out


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("base")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    base = read_base(a.base)
    toks = base["tokens"].tolist()
    llm = Llama(model_path=a.model, n_ctx=base["ctx"], n_batch=base["ctx"], n_threads=a.threads, logits_all=True,
                verbose=False)
    lp_of = {}  # target index -> llama.cpp log-probs predicting it
    for begin, end, first in windows(len(toks), base["ctx"], base["stride"]):
        llm.reset()
        llm.eval(toks[begin:end])
        scores = np.array(llm.scores[: end - begin])
        for t in range(first, end):
            lp_of[t] = log_softmax(scores[t - 1 - begin])
    kl, same, nll_b, nll_l = [], 0, [], []
    for r in base["recs"]:
        t = int(r["target"])
        lb = r["max_logp"] - STEP * r["q"].astype(np.float64)  # the base's log-probs (within half a step)
        lb = lb - np.log(np.exp(lb).sum())
        ll = lp_of[t]
        kl.append(float((np.exp(lb) * (lb - ll)).sum()))
        same += int(np.argmax(ll) == r["argmax"])
        nll_b.append(float(r["nll"]))
        nll_l.append(float(-ll[toks[t]]))
    kl, nll_b, nll_l = np.array(kl), np.array(nll_b), np.array(nll_l)
    pb, pl = np.exp(nll_b.mean()), np.exp(nll_l.mean())
    n = len(kl)
    c = np.cov(np.stack([nll_l, nll_b])) / n
    se = np.sqrt(pl * pl * c[0, 0] + pb * pb * c[1, 1] - 2 * pl * pb * c[0, 1])
    print("base: %s, %d positions (ctx %d, stride %d)" % (base["label"], n, base["ctx"], base["stride"]))
    print("llama.cpp %s: PPL %.3f vs base %.3f, dPPL %+.3f +- %.3f, KLD mean %.5f median %.5f P99 %.4f max %.4f, "
          "top-1 %.1f%%" % (getattr(__import__("llama_cpp"), "__version__", "?"), pl, pb, pl - pb, se, kl.mean(),
                            np.median(kl), np.percentile(kl, 99), kl.max(), 100.0 * same / n))


if __name__ == "__main__":
    main()

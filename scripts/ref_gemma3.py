#!/usr/bin/env python3
"""Independent NumPy reference forward pass and perplexity for Gemma 3 GGUF files (text decoder).

The oracle tinfer's gemma3 architecture is checked against: reads the GGUF with the `gguf` package
(gguf.quants.dequantize for every tensor type present: F32, Q5_0, Q8_0, Q4_K, Q6_K in the 270M Q4_K_M
file), and runs the decoder in float32 matrix products with float64 norms, RoPE angles, softmax,
residual stream and log-softmax. Written from what the architecture is, checked against
Hugging Face's modeling_gemma3 / masking_utils and llama.cpp's gemma3 graph, hparams and converter:

  x = token_embd[ids] * sqrt(n_embd)                       (float sqrt, as llama.cpp; HF rounds it to the
                                                            weight dtype, which is bf16 in the checkpoint)
  per layer il:
    h = RMSNorm(x) * attn_norm                             GGUF norms already hold (1 + w): llama.cpp's
                                                            converter adds 1 to every *norm.weight of
                                                            Gemma3 (norm_shift), so they are plain weights
    q, k, v = h Wq, h Wk, h Wv; per-head RMSNorm of q (attn_q_norm) and k (attn_k_norm); no norm on v
    RoPE NeoX style (rotate-half: pairs (i, i + d/2)), theta_i = base^(-2i/d), d = head_dim (all dims)
      base = gemma3.rope.freq_base (1e6) on global layers, 10000 on local (sliding) layers
      (llama.cpp: rope_freq_base_train_swa = 10000; HF: rope_local_base_freq = 10000)
    global layers: il % 6 == 5 ((il+1) % 6 == 0), the rest sliding-window
      (llama.cpp set_swa_pattern(6): swa iff il % 6 < 5; HF layer_types / sliding_window_pattern 6)
    q *= 1/sqrt(query_pre_attn_scalar) = 1/sqrt(head_dim) = 1/16 for 270M
      (llama.cpp f_attention_scale = 1/sqrt(n_embd_head_k) except the 27B; HF scaling = qpas**-0.5,
       query_pre_attn_scalar = 256 = head_dim in the 270M config)
    causal GQA attention (n_head / n_head_kv query heads share one kv head), no softcap;
      local layers: key j visible to query i iff 0 <= i - j < sliding_window (512): the current token
      and the 511 before it (HF sliding_window_overlay: kv_idx > q_idx - window; llama.cpp
      is_masked_swa STANDARD: masked iff p1 - p0 >= n_swa)
    x += RMSNorm(attn_out Wo) * post_attention_norm
    h = RMSNorm(x) * ffn_norm
    x += RMSNorm((gelu_tanh(h Wgate) * (h Wup)) Wdown) * post_ffw_norm
  logits = (RMSNorm(x) * output_norm) token_embd^T   (tied head; output.weight used if the file has one)

Only the RoPE scaling types "none" and "linear" are honoured (linear scales the global layers'
positions by 1/factor, as llama.cpp does: the local layers use freq_scale_train_swa = 1); any other
gemma3.rope.scaling.type is refused, as is any final/attention logit softcapping key.

Perplexity is computed as `tinfer ppl` does (tools/tinfer/quality/cmd_ppl.cpp, ppl_scoring.cpp,
quality_stats.cpp): the sequence is BOS + the text's ids, cut to --max-tokens targets; windows of
--ctx tokens start every ctx-1 tokens (each starts at position 0, a fresh cache); the first window
scores all its targets, each later one the targets past the previous window; log-softmax in float64;
ppl = exp(mean NLL).

Usage:
  ref_gemma3.py MODEL.gguf --tokens IDS.txt --ctx 512 [--max-tokens 4096] [--top TOP.txt]
  ref_gemma3.py MODEL.gguf --text FILE --ctx 512 --max-tokens 4096 [--save-tokens IDS.txt]
  ref_gemma3.py MODEL.gguf --generate "The capital of France is" [--n-predict 16]
--tokens: whitespace-separated ids of the text (no BOS: BOS is prepended, as tinfer ppl does; --no-bos
to score the ids as they are). --text tokenizes a file with the Hugging Face tokenizer built from the
GGUF (scripts/gemma3_hf_tokenizer.py), the whole file then cut, as tinfer ppl encodes it.

Measured: first 4096 tokens of ../shared/corpus/wikitext-2-test.raw (the whole file encoded by the HF tokenizer
from the GGUF, then cut), Gemma 3 270M Q4_K_M:
  ctx 512:  nll=4.2009 ppl=66.7479 tokens=4096  (197 s scoring on 2 shared cores)
  ctx 2048: nll=2.9973 ppl=20.0318 tokens=4096  (94 s)
  ref_gemma3.py models/gemma-3-270m-q4_k_m.gguf --text ../shared/corpus/wikitext-2-test.raw --ctx 512 --max-tokens 4096
The windows after the first start without BOS, which Gemma scores far worse (docs/GEMMA3_REFERENCE.md).
Test vectors: tests/data/gemma3/ref_logits.txt (--write-vectors).
"""
import argparse
import math
import os
import sys
import time

import numpy as np

import gguf


def _field(reader, name, default=None):
    f = reader.fields.get(name)
    return default if f is None else f.contents()


class Gemma3:
    def __init__(self, path):
        r = gguf.GGUFReader(path)
        arch = _field(r, "general.architecture")
        if arch != "gemma3":
            raise SystemExit(f"{path}: general.architecture is {arch!r}, not 'gemma3'")
        p = arch + "."
        self.n_embd = int(_field(r, p + "embedding_length"))
        self.n_layer = int(_field(r, p + "block_count"))
        self.n_ff = int(_field(r, p + "feed_forward_length"))
        self.n_head = int(_field(r, p + "attention.head_count"))
        self.n_head_kv = int(_field(r, p + "attention.head_count_kv", self.n_head))
        self.head_dim = int(_field(r, p + "attention.key_length", self.n_embd // self.n_head))
        self.head_dim_v = int(_field(r, p + "attention.value_length", self.head_dim))
        self.eps = float(_field(r, p + "attention.layer_norm_rms_epsilon"))
        self.rope_base = float(_field(r, p + "rope.freq_base", 10000.0))
        self.rope_base_local = float(_field(r, p + "rope.freq_base_swa", 10000.0))
        self.window = int(_field(r, p + "attention.sliding_window"))
        self.n_rot = int(_field(r, p + "rope.dimension_count", self.head_dim))
        if self.n_rot != self.head_dim:
            raise SystemExit(f"partial RoPE (n_rot {self.n_rot} != head_dim {self.head_dim}) is not Gemma 3's")
        self.rope_scale_global = 1.0
        stype = _field(r, p + "rope.scaling.type")
        factor = _field(r, p + "rope.scaling.factor")
        if stype not in (None, "none", "linear"):
            raise SystemExit(f"RoPE scaling type {stype!r} is not implemented by this reference")
        if stype == "linear" or (stype is None and factor not in (None, 0.0, 1.0)):
            self.rope_scale_global = 1.0 / float(factor)
        for key in ("final_logit_softcapping", "attn_logit_softcapping"):
            if _field(r, p + key) is not None:
                raise SystemExit(f"{p + key} is present: softcapping is not implemented by this reference")
        pattern = _field(r, p + "attention.sliding_window_pattern")
        if pattern is not None and not isinstance(pattern, (int, float)):
            self.is_local = [bool(v) for v in pattern]
        else:
            n = int(pattern) if pattern is not None else 6
            self.is_local = [(il % n) < (n - 1) for il in range(self.n_layer)]
        self.scale_q = 1.0 / math.sqrt(self.head_dim)

        self.path = path
        self.bos = _field(r, "tokenizer.ggml.bos_token_id")
        self.types = {}
        self.w = {}
        for t in r.tensors:
            self.types[t.name] = t.tensor_type.name
            a = gguf.quants.dequantize(t.data, t.tensor_type)
            shape = tuple(int(s) for s in reversed(t.shape))  # numpy order: [rows][cols] = [out][in]
            self.w[t.name] = np.ascontiguousarray(a.reshape(shape), dtype=np.float32)
        self.tok_embd = self.w["token_embd.weight"]
        self.out_w = self.w.get("output.weight", self.tok_embd)  # tied head
        self.n_vocab = self.tok_embd.shape[0]
        d = self.head_dim
        inv = np.arange(0, d, 2, dtype=np.float64) / d
        self.inv_freq_global = self.rope_base ** -inv
        self.inv_freq_local = self.rope_base_local ** -inv

    def describe(self):
        g = [il for il in range(self.n_layer) if not self.is_local[il]]
        return (f"gemma3: {self.n_layer} layers, dim {self.n_embd}, ff {self.n_ff}, heads {self.n_head}/{self.n_head_kv}"
                f" x {self.head_dim}, vocab {self.n_vocab}, eps {self.eps:g}, window {self.window},"
                f" rope {self.rope_base_local:g} local / {self.rope_base:g} global (scale {self.rope_scale_global:g}),"
                f" global layers {g}, q scale {self.scale_q:g}")

    def rmsnorm(self, x, w):
        x = x.astype(np.float64)
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w.astype(np.float64)

    def rope(self, x, pos, local):
        # x [T, H, D] float64; NeoX / rotate-half pairs (i, i + D/2).
        inv = self.inv_freq_local if local else self.inv_freq_global
        scale = 1.0 if local else self.rope_scale_global
        ang = (pos.astype(np.float64) * scale)[:, None] * inv[None, :]  # [T, D/2]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        h = x.shape[-1] // 2
        x1, x2 = x[..., :h], x[..., h:]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)

    @staticmethod
    def mm(x, w):
        return x.astype(np.float32) @ w.T

    def hidden(self, ids):
        """Final-normed hidden states [T, n_embd] (float64) of one window starting at position 0."""
        ids = np.asarray(ids, dtype=np.int64)
        T = len(ids)
        pos = np.arange(T)
        x = self.tok_embd[ids].astype(np.float64) * math.sqrt(self.n_embd)
        i = pos[:, None]
        j = pos[None, :]
        causal = j <= i
        local_mask = causal & (i - j < self.window)
        H, Hkv, D = self.n_head, self.n_head_kv, self.head_dim
        grp = H // Hkv
        for il in range(self.n_layer):
            w = lambda n: self.w[f"blk.{il}.{n}.weight"]  # noqa: E731
            local = self.is_local[il]
            h = self.rmsnorm(x, w("attn_norm"))
            q = self.mm(h, w("attn_q")).reshape(T, H, D)
            k = self.mm(h, w("attn_k")).reshape(T, Hkv, D)
            v = self.mm(h, w("attn_v")).reshape(T, Hkv, self.head_dim_v)
            q = self.rope(self.rmsnorm(q, w("attn_q_norm")), pos, local) * self.scale_q
            k = self.rope(self.rmsnorm(k, w("attn_k_norm")), pos, local)
            mask = local_mask if local else causal
            out = np.empty((T, H, self.head_dim_v), dtype=np.float64)
            for hh in range(H):
                kv = hh // grp
                s = (q[:, hh, :].astype(np.float32) @ k[:, kv, :].astype(np.float32).T).astype(np.float64)
                s = np.where(mask, s, -np.inf)
                s -= s.max(axis=1, keepdims=True)
                p = np.exp(s)
                p /= p.sum(axis=1, keepdims=True)
                out[:, hh, :] = p.astype(np.float32) @ v[:, kv, :]
            a = self.mm(out.reshape(T, H * self.head_dim_v), w("attn_output"))
            x = x + self.rmsnorm(a, w("post_attention_norm"))
            h = self.rmsnorm(x, w("ffn_norm"))
            g = self.mm(h, w("ffn_gate")).astype(np.float64)
            u = self.mm(h, w("ffn_up")).astype(np.float64)
            gelu = 0.5 * g * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (g + 0.044715 * g * g * g)))
            f = self.mm(gelu * u, w("ffn_down"))
            x = x + self.rmsnorm(f, w("post_ffw_norm"))
        return self.rmsnorm(x, self.w["output_norm.weight"])

    def logits_rows(self, hid, rows, chunk=256):
        """Yields (row index, float32 logits) for the requested rows of hidden states."""
        rows = list(rows)
        for c in range(0, len(rows), chunk):
            part = rows[c:c + chunk]
            lg = self.mm(hid[part], self.out_w)
            for r, row in zip(part, lg):
                yield r, row


def log_softmax64(row):
    r = row.astype(np.float64)
    m = r.max()
    return r - (m + math.log(np.exp(r - m).sum()))


def score_windows(n, ctx, stride):
    """tinfer's strided schedule (tools/tinfer/quality/quality_stats.cpp): (begin, end, first_target) per window."""
    assert n >= 2 and ctx >= 2 and 1 <= stride <= ctx - 1
    out, prev_end, begin = [], 1, 0
    while True:
        end = min(n, begin + ctx)
        out.append((begin, end, max(prev_end, begin + 1)))
        if end == n:
            return out
        prev_end = end
        begin += stride


def perplexity(model, seq, ctx, stride=None, top_file=None, top_k=5, log=sys.stderr):
    stride = stride or ctx - 1
    total, n = 0.0, 0
    top_out = open(top_file, "w") if top_file else None
    t0 = time.time()
    for wi, (b, e, ft) in enumerate(score_windows(len(seq), ctx, stride)):
        hid = model.hidden(seq[b:e])
        first_row = ft - 1 - b
        for r, row in model.logits_rows(hid, range(first_row, e - b - 1)):
            lp = log_softmax64(row)
            t = b + r + 1
            total -= lp[seq[t]]
            n += 1
            if top_out is not None and wi == 0:
                top = np.argsort(-row, kind="stable")[:top_k]
                top_out.write(f"{r} target={seq[t]} nll={-lp[seq[t]]:.6f} " +
                              " ".join(f"{int(i)}:{row[i]:.5f}" for i in top) + "\n")
        print(f"window {wi}: tokens [{b}, {e}) scored {e - ft}, running ppl {math.exp(total / n):.4f}"
              f" ({time.time() - t0:.0f} s)", file=log, flush=True)
    if top_out is not None:
        top_out.close()
    return total / n, n


def read_ids(path):
    with open(path) as f:
        return [int(x) for x in f.read().split()]


def scoring_sequence(model, text_ids, max_tokens, bos=True):
    seq = ([model.bos] if bos and model.bos is not None else []) + list(text_ids)
    if max_tokens and len(seq) > max_tokens + 1:
        seq = seq[:max_tokens + 1]
    assert len(seq) >= 2, "fewer than one target token"
    return seq


SHORT_TEXT = ("The capital of France is Paris. The capital of Germany is Berlin, and the capital of Italy is Rome. "
              "Water boils at 100 degrees Celsius at sea level.")
SHORT_POSITIONS = [0, 1, 2, 5, 6, 10, 20, 30]
LONG_POSITIONS = [0, 1, 100, 300, 510, 511, 512, 513, 600, 650]


def write_vectors(model, out, text_ids, ppl_lines, command):
    """Top-5 ids and logits at fixed positions of a short and a long (> sliding window) sequence."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gemma3_hf_tokenizer import encode, hf_tokenizer_from_gguf
    short = [model.bos] + encode(hf_tokenizer_from_gguf(model.path), SHORT_TEXT)
    long = [model.bos] + list(text_ids[:699])
    SHORT_POSITIONS.append(len(short) - 1)
    LONG_POSITIONS.append(len(long) - 1)
    with open(out, "w") as f:
        f.write(f"# generated by: {command}\n")
        f.write("# Gemma 3 270M Q4_K_M reference (scripts/ref_gemma3.py: gguf dequantize + NumPy, fp32 products,"
                " fp64 norms/softmax). One window from position 0.\n")
        f.write("# seq NAME N: the token ids fed (BOS first); top NAME POS: the 5 highest logits at position POS"
                " (predicting token POS+1) as id:logit, best first.\n")
        f.write(f"# short text: {SHORT_TEXT!r} (HF tokenizer from the GGUF); long: BOS + the first 699 ids of"
                " wikitext-2-test.raw (positions past 511 see the sliding window drop keys).\n")
        for line in ppl_lines:
            f.write(line + "\n")
        for name, seq, positions in (("short", short, SHORT_POSITIONS), ("long", long, LONG_POSITIONS)):
            f.write(f"seq {name} {len(seq)} " + " ".join(map(str, seq)) + "\n")
            hid = model.hidden(seq)
            for pos, row in model.logits_rows(hid, positions):
                top = np.argsort(-row, kind="stable")[:5]
                f.write(f"top {name} {pos} " + " ".join(f"{int(i)}:{row[i]:.4f}" for i in top) + "\n")
    print(f"wrote {out}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--tokens", help="whitespace-separated ids of the text (BOS is prepended)")
    ap.add_argument("--text", help="text file, tokenized with the HF tokenizer built from the GGUF")
    ap.add_argument("--max-bytes", type=int, default=0, help="read at most this many bytes of --text")
    ap.add_argument("--save-tokens", help="write the text's ids (no BOS) here")
    ap.add_argument("--no-bos", action="store_true", help="do not prepend BOS")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--stride", type=int, default=0, help="default ctx-1, as tinfer ppl")
    ap.add_argument("--max-tokens", type=int, default=0, help="score at most this many targets (0 = all)")
    ap.add_argument("--top", help="write per-position top-5 ids/logits of the first window here")
    ap.add_argument("--generate", help="greedy continuation of this prompt (sanity check)")
    ap.add_argument("--n-predict", type=int, default=16)
    ap.add_argument("--write-vectors", help="write the short/long top-5 test vectors here (needs --tokens/--text"
                    " for the long sequence)")
    ap.add_argument("--ppl-line", action="append", default=[], help="(with --write-vectors) a line to record")
    a = ap.parse_args()

    t0 = time.time()
    model = Gemma3(a.model)
    print(model.describe(), file=sys.stderr)
    print(f"loaded and dequantized in {time.time() - t0:.1f} s", file=sys.stderr)

    if a.generate is not None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from gemma3_hf_tokenizer import encode, hf_tokenizer_from_gguf
        tok = hf_tokenizer_from_gguf(a.model)
        ids = [model.bos] + encode(tok, a.generate)
        prompt_len = len(ids)
        for _ in range(a.n_predict):
            hid = model.hidden(ids)
            _, row = next(model.logits_rows(hid, [len(ids) - 1]))
            ids.append(int(np.argmax(row)))
        gen = ids[prompt_len:]
        print("prompt ids:", ids[:prompt_len])
        print("greedy ids:", gen)
        print("greedy text:", repr(tok.backend_tokenizer.decode(gen, skip_special_tokens=False)))
        return

    if a.tokens:
        text_ids = read_ids(a.tokens)
    elif a.text:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from gemma3_hf_tokenizer import encode, hf_tokenizer_from_gguf
        with open(a.text, "rb") as f:
            raw = f.read()
        if a.max_bytes:
            raw = raw[:a.max_bytes]
        t1 = time.time()
        text_ids = encode(hf_tokenizer_from_gguf(a.model), raw.decode("utf-8", errors="replace"))
        print(f"tokenized {len(raw)} bytes into {len(text_ids)} ids in {time.time() - t1:.1f} s", file=sys.stderr)
    else:
        ap.error("one of --tokens, --text, --generate is required")
    if a.save_tokens:
        with open(a.save_tokens, "w") as f:
            f.write(" ".join(map(str, text_ids)) + "\n")
    if a.write_vectors:
        argv, skip = [], False
        for x in sys.argv[1:]:
            if skip or x == "--ppl-line":
                skip = x == "--ppl-line"
                continue
            argv.append(x)
        write_vectors(model, a.write_vectors, text_ids, a.ppl_line, "scripts/ref_gemma3.py " + " ".join(argv))
        return
    seq = scoring_sequence(model, text_ids, a.max_tokens, bos=not a.no_bos)
    t1 = time.time()
    nll, n = perplexity(model, seq, a.ctx, a.stride or None, a.top)
    secs = time.time() - t1
    print(f"scored {n} tokens in {secs:.1f} s, windows of {a.ctx} every {a.stride or a.ctx - 1}", file=sys.stderr)
    print(f"nll={nll:.4f} ppl={math.exp(nll):.4f} tokens={n}")


if __name__ == "__main__":
    main()

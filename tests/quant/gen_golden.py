#!/usr/bin/env python3
# Generates the golden (de)quantization fixtures in data/ with gguf-py (pip package `gguf`), an
# implementation of the GGUF block formats independent of ours. Run once at development time:
#   /tmp/venv/bin/python tests/quant/gen_golden.py      (needs numpy + gguf; tests never run Python)
# File formats (little endian):
#   <type>.quant.bin    u32 n | f32 x[n]           | u8 blocks[row_bytes(n)]   expected quantize(x)
#   <type>.dequant.bin  u32 n | u8 blocks[row_bytes(n)] | f32 y[n]             expected dequantize(blocks)
import os
import struct

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
N = 1024  # elements per fixture: 32 small blocks or 4 super-blocks

TYPES = {  # name -> (gguf type, block size, block bytes)
    "f32": (T.F32, 1, 4), "f16": (T.F16, 1, 2), "bf16": (T.BF16, 1, 2),
    "q8_0": (T.Q8_0, 32, 34), "q4_0": (T.Q4_0, 32, 18), "q4_1": (T.Q4_1, 32, 20),
    "q4_k": (T.Q4_K, 256, 144), "q6_k": (T.Q6_K, 256, 210),
}
# gguf-py has only dequantizers for the K-quants.
NO_QUANTIZER = {"q4_k", "q6_k"}


def inputs(rng, block):
    """N floats, one distribution per 32-element chunk: the awkward cases every quantizer must handle."""
    gens = [
        lambda: rng.standard_normal(32),
        lambda: rng.uniform(-1, 1, 32),
        lambda: np.zeros(32),
        lambda: rng.standard_normal(32) * 1e-6,           # tiny (f16 subnormal range)
        lambda: rng.standard_normal(32) * 1e3,            # huge, still finite in fp16 scales
        lambda: np.full(32, rng.standard_normal()),       # constant
        lambda: np.eye(32)[rng.integers(32)] * rng.standard_normal() * 5,  # one-hot
        lambda: rng.uniform(0.5, 2.0, 32),                # all positive (q4_1 min > 0)
        lambda: -rng.uniform(0.5, 2.0, 32),               # all negative
        lambda: rng.integers(-127, 128, 32) + 0.5,        # many exact halves (rounding ties)
        lambda: rng.standard_normal(32) ** 3,             # heavy tailed
        lambda: rng.laplace(0, 0.02, 32),                 # weight-like
    ]
    chunks = [gens[i % len(gens)]() for i in range(N // 32)]
    rng.shuffle(chunks)
    return np.concatenate(chunks).astype(np.float32)


def random_blocks(rng, name, nblocks, bsize):
    raw = rng.integers(0, 256, (nblocks, bsize), dtype=np.uint8)
    # Overwrite the fp16 scale fields with finite, moderate values (random bits may be inf/nan).
    def f16(scale):
        return np.frombuffer((rng.standard_normal(nblocks) * scale).astype(np.float16).tobytes(),
                             dtype=np.uint8).reshape(nblocks, 2)
    if name in ("q8_0", "q4_0"):
        raw[:, 0:2] = f16(0.05)
    elif name == "q4_1":
        raw[:, 0:2] = f16(0.05)
        raw[:, 2:4] = f16(1.0)
    elif name == "q4_k":
        raw[:, 0:2] = f16(0.01)
        raw[:, 2:4] = f16(0.01)
    elif name == "q6_k":
        raw[:, 208:210] = f16(0.001)
    elif name == "f16":
        raw[:] = np.frombuffer((rng.standard_normal(nblocks) * 10).astype(np.float16).tobytes(),
                               dtype=np.uint8).reshape(nblocks, 2)
    elif name == "f32":
        raw[:] = np.frombuffer(rng.standard_normal(nblocks).astype(np.float32).tobytes(),
                               dtype=np.uint8).reshape(nblocks, 4)
    elif name == "bf16":
        raw[:, 1] = np.uint8(0x3c) | (raw[:, 1] & np.uint8(0x83))  # any sign, |x| in [2^-7, 2^-3): finite
    return raw


def main():
    os.makedirs(OUT, exist_ok=True)
    for k, (name, (qt, block, bsize)) in enumerate(TYPES.items()):
        rng = np.random.default_rng(1234 + k)
        nblocks = N // block
        if name not in NO_QUANTIZER:
            x = inputs(rng, block)
            if name == "f16":
                x[:4] = [70000.0, -65520.0, 65519.0, 5.96e-8]  # overflow to inf, largest finite, subnormal
            with np.errstate(over="ignore"):  # the f16 overflow cases are intended
                q = np.asarray(quants.quantize(x, qt)).view(np.uint8).reshape(-1)
            assert q.size == nblocks * bsize, (name, q.size)
            with open(os.path.join(OUT, f"{name}.quant.bin"), "wb") as f:
                f.write(struct.pack("<I", N) + x.tobytes() + q.tobytes())
        blocks = random_blocks(rng, name, nblocks, bsize)
        y = quants.dequantize(blocks.reshape(-1), qt).astype(np.float32).reshape(-1)
        assert y.size == N and np.all(np.isfinite(y)), name
        with open(os.path.join(OUT, f"{name}.dequant.bin"), "wb") as f:
            f.write(struct.pack("<I", N) + blocks.tobytes() + y.tobytes())
        print(name, "quant" if name not in NO_QUANTIZER else "-", "dequant")


if __name__ == "__main__":
    main()

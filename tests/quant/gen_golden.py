#!/usr/bin/env python3
# Generates the golden (de)quantization fixtures in data/ with gguf-py (pip package `gguf`), an
# implementation of the GGUF block formats independent of ours. gguf-py cannot quantize the K-quants:
# those quantize fixtures come from the scalar float32 numpy ports below (a cross-check of the C++). Run once at development time:
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
N = 1024  # elements per fixture: 32 small blocks or 4 super-blocks (16 for the ported quantizers)

TYPES = {  # name -> (gguf type, block size, block bytes)
    "f32": (T.F32, 1, 4), "f16": (T.F16, 1, 2), "bf16": (T.BF16, 1, 2),
    "q8_0": (T.Q8_0, 32, 34), "q4_0": (T.Q4_0, 32, 18), "q4_1": (T.Q4_1, 32, 20),
    "q4_k": (T.Q4_K, 256, 144), "q6_k": (T.Q6_K, 256, 210),
    # Appended (each type's rng seed is its position here: earlier fixtures stay byte-identical).
    "q5_0": (T.Q5_0, 32, 22), "q5_1": (T.Q5_1, 32, 24),
    "q2_k": (T.Q2_K, 256, 84), "q3_k": (T.Q3_K, 256, 110), "q5_k": (T.Q5_K, 256, 176),
}
# gguf-py has only dequantizers for the K-quants; their quantize fixtures come from the numpy ports
# of ggml's quantize_row_q{2,3,4,5,6}_K_ref below (our own second implementation, written from ggml's C).

f32 = np.float32


def nearest_int(v):  # ggml's magic-number rounding = round half to even for |v| < 2^22
    return int(np.rint(f32(v)))


def f16_round(v):  # fp32 -> fp16 (RNE) -> fp32, and the fp16 bits
    h = np.float16(f32(v))
    return f32(h), int(np.array(h).view(np.uint16))


def make_qkx2_quants(nmax, x, w, rmin, rdelta, nstep, use_mad=False):
    """Scalar float32 port of make_qkx2_quants. Returns (L, scale, the_min)."""
    def err(diff):
        return abs(diff) if use_mad else f32(diff * diff)

    n = len(x)
    mn, mx, sum_w = x[0], x[0], w[0]
    sum_x = f32(sum_w * x[0])
    for i in range(1, n):
        mn = x[i] if x[i] < mn else mn
        mx = x[i] if x[i] > mx else mx
        sum_w = f32(sum_w + w[i])
        sum_x = f32(sum_x + f32(w[i] * x[i]))
    if mn > 0:
        mn = f32(0)
    if mx == mn:
        return [0] * n, f32(0), f32(-mn)
    iscale = f32(f32(nmax) / f32(mx - mn))
    scale = f32(f32(1) / iscale)
    L = [max(0, min(nmax, nearest_int(f32(iscale * f32(v - mn))))) for v in x]
    best = f32(0)
    for i in range(n):
        diff = f32(f32(f32(scale * f32(L[i])) + mn) - x[i])
        best = f32(best + f32(w[i] * err(diff)))
    for step in range(nstep + 1):
        iscale = f32(f32(f32(rmin + f32(rdelta * f32(step))) + f32(nmax)) / f32(mx - mn))
        sum_l = sum_l2 = sum_xl = f32(0)
        Laux = []
        for i in range(n):
            l = max(0, min(nmax, nearest_int(f32(iscale * f32(x[i] - mn)))))
            Laux.append(l)
            sum_l = f32(sum_l + f32(w[i] * f32(l)))
            sum_l2 = f32(sum_l2 + f32(f32(w[i] * f32(l)) * f32(l)))
            sum_xl = f32(sum_xl + f32(f32(w[i] * f32(l)) * x[i]))
        D = f32(f32(sum_w * sum_l2) - f32(sum_l * sum_l))
        if D > 0:
            this_scale = f32(f32(f32(sum_w * sum_xl) - f32(sum_x * sum_l)) / D)
            this_min = f32(f32(f32(sum_l2 * sum_x) - f32(sum_l * sum_xl)) / D)
            if this_min > 0:
                this_min = f32(0)
                this_scale = f32(sum_xl / sum_l2)
            cur = f32(0)
            for i in range(n):
                diff = f32(f32(f32(this_scale * f32(Laux[i])) + this_min) - x[i])
                cur = f32(cur + f32(w[i] * err(diff)))
            if cur < best:
                L, best, scale, mn = Laux, cur, this_scale, this_min
    return L, scale, f32(-mn)


def quantize_q45_k_scales(x, nmax, rmin, rdelta, nstep):
    """The half of quantize_row_q{4,5}_K_ref the two share: returns (d_bits, dmin_bits, packed scales, L)."""
    L, scales, mins = [], [], []
    for j in range(8):
        xs = [f32(v) for v in x[32 * j:32 * j + 32]]
        sum_x2 = f32(0)
        for v in xs:
            sum_x2 = f32(sum_x2 + f32(v * v))
        av_x = np.sqrt(f32(sum_x2 / f32(32)))
        w = [f32(av_x + abs(v)) for v in xs]
        Lj, sc, mn = make_qkx2_quants(nmax, xs, w, f32(rmin), f32(rdelta), nstep)
        L += Lj
        scales.append(sc)
        mins.append(mn)
    max_scale = max([f32(0)] + [s for s in scales if s > 0])
    max_min = max([f32(0)] + [m for m in mins if m > 0])
    inv_scale = f32(f32(63) / max_scale) if max_scale > 0 else f32(0)
    inv_min = f32(f32(63) / max_min) if max_min > 0 else f32(0)
    packed = [0] * 12
    for j in range(8):
        ls = min(63, nearest_int(f32(inv_scale * scales[j])) & 0xFF)
        lm = min(63, nearest_int(f32(inv_min * mins[j])) & 0xFF)
        if j < 4:
            packed[j], packed[j + 4] = ls, lm
        else:
            packed[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4)
            packed[j - 4] |= (ls >> 4) << 6
            packed[j] |= (lm >> 4) << 6
    d, d_bits = f16_round(f32(max_scale / f32(63)))
    dmin, dmin_bits = f16_round(f32(max_min / f32(63)))
    for j in range(8):
        if j < 4:
            sc, m = packed[j] & 63, packed[j + 4] & 63
        else:
            sc = (packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4)
            m = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4)
        dj = f32(d * f32(sc))
        if dj == 0:
            continue
        dm = f32(dmin * f32(m))
        for i in range(32):
            L[32 * j + i] = max(0, min(nmax, nearest_int(f32(f32(f32(x[32 * j + i]) + dm) / dj))))
    return d_bits, dmin_bits, packed, L


def nibbles_k(L):  # Q4_K/Q5_K qs: per 64 elements, byte l = element l | element l+32 << 4 (low 4 bits)
    return bytes((L[j + l] & 15) | ((L[j + l + 32] & 15) << 4) for j in range(0, 256, 64) for l in range(32))


def high_bits_k(L, bit):  # Q3_K hmask / Q5_K qh: bit e//32 of byte e%32 = bit `bit` of element e
    hm = [0] * 32
    for e in range(256):
        hm[e % 32] |= ((L[e] >> bit) & 1) << (e // 32)
    return bytes(hm)


def crumbs_k(L):  # Q2_K/Q3_K qs: per 128 elements, byte l = elements l, l+32, l+64, l+96 at bits 0,2,4,6
    return bytes((L[j + l] & 3) | ((L[j + l + 32] & 3) << 2) | ((L[j + l + 64] & 3) << 4) | ((L[j + l + 96] & 3) << 6)
                 for j in range(0, 256, 128) for l in range(32))


def quantize_q4_k_block(x):
    d_bits, dmin_bits, packed, L = quantize_q45_k_scales(x, 15, -1.0, 0.1, 20)
    return struct.pack("<HH", d_bits, dmin_bits) + bytes(packed) + nibbles_k(L)


def quantize_q5_k_block(x):
    d_bits, dmin_bits, packed, L = quantize_q45_k_scales(x, 31, -0.5, 0.1, 15)
    return struct.pack("<HH", d_bits, dmin_bits) + bytes(packed) + high_bits_k(L, 4) + nibbles_k(L)


def quantize_q2_k_block(x):
    x = [f32(v) for v in x]
    L, scales, mins = [], [], []
    for j in range(16):
        xs = x[16 * j:16 * j + 16]
        Lj, sc, mn = make_qkx2_quants(3, xs, [abs(v) for v in xs], f32(-0.5), f32(0.1), 15, use_mad=True)
        L += Lj
        scales.append(sc)
        mins.append(mn)
    max_scale = max([f32(0)] + [v for v in scales if v > 0])
    max_min = max([f32(0)] + [v for v in mins if v > 0])
    sc = [0] * 16
    if max_scale > 0:
        iscale = f32(f32(15) / max_scale)
        sc = [nearest_int(f32(iscale * v)) & 0xFF for v in scales]
        d, d_bits = f16_round(f32(max_scale / f32(15)))
    else:
        d, d_bits = f16_round(f32(0))
    if max_min > 0:
        iscale = f32(f32(15) / max_min)
        sc = [(sc[j] | (nearest_int(f32(iscale * mins[j])) << 4)) & 0xFF for j in range(16)]
        dmin, dmin_bits = f16_round(f32(max_min / f32(15)))
    else:
        dmin, dmin_bits = f16_round(f32(0))
    for j in range(16):
        dj = f32(d * f32(sc[j] & 0xF))
        if dj == 0:
            continue
        dm = f32(dmin * f32(sc[j] >> 4))
        for i in range(16):
            L[16 * j + i] = max(0, min(3, nearest_int(f32(f32(x[16 * j + i] + dm) / dj))))
    return bytes(sc) + crumbs_k(L) + struct.pack("<HH", d_bits, dmin_bits)


def make_q3_quants(nmax, x):
    """Scalar float32 port of make_q3_quants(do_rmse = true). Returns (L offset by nmax, scale)."""
    amax, mx = f32(0), f32(0)
    for v in x:
        if abs(v) > amax:
            amax, mx = abs(v), v
    if amax < f32(1e-15):
        return [0] * len(x), f32(0)
    iscale = f32(f32(-nmax) / mx)
    L = [max(-nmax, min(nmax - 1, nearest_int(f32(iscale * v)))) for v in x]
    sumlx = suml2 = f32(0)
    for v, l in zip(x, L):
        w = f32(v * v)
        sumlx = f32(sumlx + f32(f32(w * v) * f32(l)))
        suml2 = f32(suml2 + f32(f32(w * f32(l)) * f32(l)))
    for _ in range(5):
        n_changed = 0
        for i, v in enumerate(x):
            w = f32(v * v)
            slx = f32(sumlx - f32(f32(w * v) * f32(L[i])))
            if slx > 0:
                sl2 = f32(suml2 - f32(f32(w * f32(L[i])) * f32(L[i])))
                new_l = max(-nmax, min(nmax - 1, nearest_int(f32(f32(v * sl2) / slx))))
                if new_l != L[i]:
                    slx = f32(slx + f32(f32(w * v) * f32(new_l)))
                    sl2 = f32(sl2 + f32(f32(w * f32(new_l)) * f32(new_l)))
                    if sl2 > 0 and f32(f32(slx * slx) * suml2) > f32(f32(sumlx * sumlx) * sl2):
                        L[i], sumlx, suml2 = new_l, slx, sl2
                        n_changed += 1
        if not n_changed:
            break
    return [l + nmax for l in L], (f32(sumlx / suml2) if suml2 > 0 else f32(0))


def quantize_q3_k_block(x):
    x = [f32(v) for v in x]
    L, scales = [], []
    max_scale = amax = f32(0)
    for j in range(16):
        Lj, sc = make_q3_quants(4, x[16 * j:16 * j + 16])
        L += Lj
        scales.append(sc)
        if abs(sc) > amax:
            amax, max_scale = abs(sc), sc
    levels = [0] * 16
    if max_scale != 0:
        iscale = f32(f32(-32) / max_scale)
        levels = [max(-32, min(31, nearest_int(f32(iscale * v)))) + 32 for v in scales]
        d, d_bits = f16_round(f32(f32(1) / iscale))
    else:
        d, d_bits = f16_round(f32(0))
    packed = [0] * 12
    for j in range(16):
        if j < 8:
            packed[j] = levels[j] & 0xF
        else:
            packed[j - 8] |= (levels[j] & 0xF) << 4
        packed[8 + j % 4] |= (levels[j] >> 4) << (2 * (j // 4))
    for j in range(16):
        dj = f32(d * f32(levels[j] - 32))
        if dj == 0:
            continue
        for i in range(16):
            L[16 * j + i] = max(-4, min(3, nearest_int(f32(x[16 * j + i] / dj)))) + 4
    return high_bits_k(L, 2) + crumbs_k(L) + bytes(packed) + struct.pack("<H", d_bits)


def make_qx_quants_rmse1(nmax, x):
    """Scalar float32 port of make_qx_quants(rmse_type = 1, qw = NULL). Returns (L, scale)."""
    amax, mx = f32(0), f32(0)
    for v in x:
        if abs(v) > amax:
            amax, mx = abs(v), v
    if amax < f32(1e-15):
        return [0] * len(x), f32(0)

    def fit(iscale):
        ls = [max(-nmax, min(nmax - 1, nearest_int(f32(iscale * v)))) for v in x]
        sumlx = suml2 = f32(0)
        for v, l in zip(x, ls):
            w = f32(v * v)
            sumlx = f32(sumlx + f32(f32(w * v) * f32(l)))
            suml2 = f32(suml2 + f32(f32(w * f32(l)) * f32(l)))
        return ls, sumlx, suml2

    ls, sumlx, suml2 = fit(f32(f32(-nmax) / mx))
    L = [l + nmax for l in ls]
    scale = f32(sumlx / suml2) if suml2 != 0 else f32(0)
    best = f32(scale * sumlx)
    for step in range(-9, 10):
        if step == 0:
            continue
        ls, sumlx, suml2 = fit(f32(f32(-f32(f32(nmax) + f32(f32(0.1) * f32(step)))) / mx))
        if suml2 > 0 and f32(sumlx * sumlx) > f32(best * suml2):
            L = [l + nmax for l in ls]
            scale = f32(sumlx / suml2)
            best = f32(scale * sumlx)
    return L, scale


def quantize_q6_k_block(x):
    x = [f32(v) for v in x]
    L, scales = [], []
    max_scale = max_abs = f32(0)
    for ib in range(16):
        Lb, sc = make_qx_quants_rmse1(32, x[16 * ib:16 * ib + 16])
        L += Lb
        scales.append(sc)
        if abs(sc) > max_abs:
            max_abs, max_scale = abs(sc), sc
    if max_abs < f32(1e-15):
        return bytes(210)
    iscale = f32(f32(-128) / max_scale)
    d, d_bits = f16_round(f32(f32(1) / iscale))
    sc8 = [min(127, nearest_int(f32(iscale * s))) for s in scales]
    for j in range(16):
        dj = f32(d * f32(sc8[j]))
        if dj == 0:
            continue
        for i in range(16):
            L[16 * j + i] = max(-32, min(31, nearest_int(f32(x[16 * j + i] / dj)))) + 32
    ql, qh = [0] * 128, [0] * 64
    for h, j in enumerate(range(0, 256, 128)):
        for l in range(32):
            q = [L[j + l + 32 * k] for k in range(4)]
            ql[64 * h + l] = (q[0] & 0xF) | ((q[2] & 0xF) << 4)
            ql[64 * h + l + 32] = (q[1] & 0xF) | ((q[3] & 0xF) << 4)
            qh[32 * h + l] = (q[0] >> 4) | ((q[1] >> 4) << 2) | ((q[2] >> 4) << 4) | ((q[3] >> 4) << 6)
    return bytes(ql) + bytes(qh) + struct.pack("<16b", *sc8) + struct.pack("<H", d_bits)


PORTED = {"q2_k": quantize_q2_k_block, "q3_k": quantize_q3_k_block, "q4_k": quantize_q4_k_block,
          "q5_k": quantize_q5_k_block, "q6_k": quantize_q6_k_block}


def inputs(rng, n):
    """n floats, one distribution per 32-element chunk: the awkward cases every quantizer must handle."""
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
    chunks = [gens[i % len(gens)]() for i in range(n // 32)]
    rng.shuffle(chunks)
    return np.concatenate(chunks).astype(np.float32)


def random_blocks(rng, name, nblocks, bsize):
    raw = rng.integers(0, 256, (nblocks, bsize), dtype=np.uint8)
    # Overwrite the fp16 scale fields with finite, moderate values (random bits may be inf/nan).
    def f16(scale):
        return np.frombuffer((rng.standard_normal(nblocks) * scale).astype(np.float16).tobytes(),
                             dtype=np.uint8).reshape(nblocks, 2)
    if name in ("q8_0", "q4_0", "q5_0"):
        raw[:, 0:2] = f16(0.05)
    elif name in ("q4_1", "q5_1"):
        raw[:, 0:2] = f16(0.05)
        raw[:, 2:4] = f16(1.0)
    elif name in ("q4_k", "q5_k"):
        raw[:, 0:2] = f16(0.01)
        raw[:, 2:4] = f16(0.01)
    elif name == "q2_k":
        raw[:, 80:82] = f16(0.01)
        raw[:, 82:84] = f16(0.01)
    elif name == "q3_k":
        raw[:, 108:110] = f16(0.01)
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
        n = 4 * N if name in PORTED else N  # more super-blocks for the formats without a gguf-py quantizer
        x = inputs(rng, n)
        if name == "f16":
            x[:4] = [70000.0, -65520.0, 65519.0, 5.96e-8]  # overflow to inf, largest finite, subnormal
        if name in PORTED:
            q = np.frombuffer(b"".join(PORTED[name](x[i:i + block]) for i in range(0, n, block)), np.uint8)
        else:
            with np.errstate(over="ignore"):  # the f16 overflow cases are intended
                q = np.asarray(quants.quantize(x, qt)).view(np.uint8).reshape(-1)
        assert q.size == n // block * bsize, (name, q.size)
        with open(os.path.join(OUT, f"{name}.quant.bin"), "wb") as f:
            f.write(struct.pack("<I", n) + x.tobytes() + q.tobytes())
        blocks = random_blocks(rng, name, nblocks, bsize)
        y = quants.dequantize(blocks.reshape(-1), qt).astype(np.float32).reshape(-1)
        assert y.size == N and np.all(np.isfinite(y)), name
        with open(os.path.join(OUT, f"{name}.dequant.bin"), "wb") as f:
            f.write(struct.pack("<I", N) + blocks.tobytes() + y.tobytes())
        print(name, "quant (ported ref)" if name in PORTED else "quant (gguf-py)", "dequant (gguf-py)")


if __name__ == "__main__":
    main()

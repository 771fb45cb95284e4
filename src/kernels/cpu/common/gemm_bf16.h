// BF16 x BF16 -> fp32 GEMM on AVX512-BF16 dot products (vdpbf16ps: per fp32 lane j, acc[j] +=
// w[2j] * x[2j] + w[2j+1] * x[2j+1], 32 multiply-adds per instruction, twice an fp32 FMA's 16).
// BF16 weights stay in their GGUF row layout: 32 consecutive bf16 of a row are exactly the operand
// vdpbf16ps takes, so the weights need no conversion. The activations are rounded to bf16 once per
// matmul call (bf16_round_rows, round-to-nearest-even: vcvtne2ps2bf16) into a panel whose rows are
// padded with zeros to a multiple of 32 (FloatGemmArgs::xb, ldxb), shared by every worker.
// Accuracy: each activation carries a relative error <= 2^-8 (bf16's unit roundoff: 8 significant bits); the products of
// two bf16 are exact in fp32 and accumulate in fp32, so |y - W.x| <= 2^-8 * sum|w x| + fp32 summation
// error; with activations that are already bf16 the result is exact up to fp32 summation order.
//
// Register tile: kBR = 4 weight rows x kBM = 6 activation rows = 24 zmm accumulators + 4 weights + 1
// activation (of 32). Each 64-byte weight load is used 6 times, each activation load 4 times. The 4
// accumulators of one activation row reduce together (two unpack/add levels, then the 128-bit lanes)
// into one 4-float store: y[i][r..r+4) is contiguous.
//
// Written against a handful of operations (the "ops" below): the AVX-512 intrinsics where the TU is
// built with -mavx512bf16, or, with TINFER_BF16_EMULATE defined, a plain-C++ model of the same
// instructions, so the kernel's tiling, tails and reductions run in tests on machines without
// AVX512-BF16 (tests/kernels/bf16_gemm_test.cpp). Internal linkage, included once per TU.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"

#if !defined(TINFER_BF16_EMULATE)
#if !defined(__AVX512BF16__) || !defined(__AVX512BW__)
#error "gemm_bf16.h needs -mavx512bf16 -mavx512bw (or TINFER_BF16_EMULATE for the portable model)"
#endif
#include <immintrin.h>
#endif

namespace tinfer {
namespace {
namespace bf16k {

constexpr int kBR = 4;
constexpr int kBM = 6;
constexpr int kBK = 32;  // bf16 per vector
constexpr int kPrefetchRows = 2 * kBR;  // the far prefetch (into L2) runs two weight panels ahead (see Ahead)

// Round-to-nearest-even fp32 -> bf16 with vcvtne2ps2bf16's treatment of the edges: NaN stays a
// (quiet) NaN, denormal inputs become signed zero.
inline uint16_t to_bf16_scalar(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return uint16_t((u >> 16) | 0x0040u);
  if ((u & 0x7f800000u) == 0) return uint16_t((u >> 16) & 0x8000u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

#if defined(TINFER_BF16_EMULATE)
struct Acc {
  float f[16];
};
struct BV {
  uint16_t h[32];
};
inline float widen(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline Acc acc_zero() { return Acc{}; }
inline BV load32(const void* p) {
  BV v;
  std::memcpy(v.h, p, 64);
  return v;
}
// The first n (< 32) bf16 at p, the rest zero; reads only those n (like a masked load).
inline BV load_tail(const void* p, int n) {
  BV v{};
  std::memcpy(v.h, p, size_t(n) * 2);
  return v;
}
inline Acc dp(Acc a, const BV& w, const BV& x) {
  for (int j = 0; j < 16; ++j) {
    a.f[j] += widen(w.h[2 * j + 1]) * widen(x.h[2 * j + 1]);
    a.f[j] += widen(w.h[2 * j]) * widen(x.h[2 * j]);
  }
  return a;
}
inline float reduce(const Acc& a) {
  float s = 0;
  for (float v : a.f) s += v;
  return s;
}
inline void store4(float* y, const Acc& a0, const Acc& a1, const Acc& a2, const Acc& a3) {
  y[0] = reduce(a0), y[1] = reduce(a1), y[2] = reduce(a2), y[3] = reduce(a3);
}
inline void round32(const float* x, uint16_t* out) {
  for (int k = 0; k < 32; ++k) out[k] = to_bf16_scalar(x[k]);
}
inline void prefetch_l1(const void*) {}
inline void prefetch_l2(const void*) {}
#else
using Acc = __m512;
using BV = __m512bh;
inline Acc acc_zero() { return _mm512_setzero_ps(); }
inline BV load32(const void* p) { return (BV)_mm512_loadu_si512(p); }
inline BV load_tail(const void* p, int n) {
  return (BV)_mm512_maskz_loadu_epi16(__mmask32((uint64_t(1) << n) - 1), p);  // masked: no read past n
}
inline Acc dp(Acc a, BV w, BV x) { return _mm512_dpbf16_ps(a, w, x); }
inline float reduce(Acc a) { return _mm512_reduce_add_ps(a); }
inline void store4(float* y, Acc a0, Acc a1, Acc a2, Acc a3) {
  // Per 128-bit lane: [a0 a1 a0 a1] pair sums, then [a0 a1 a2 a3]; then the four lanes added.
  const __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
  const __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
  const __m512 s = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(s01), _mm512_castps_pd(s23))),
                                 _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(s01), _mm512_castps_pd(s23))));
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
  _mm_storeu_ps(y, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}
inline void prefetch_l1(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
inline void prefetch_l2(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1); }
inline void round32(const float* x, uint16_t* out) {
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + 16), _mm512_loadu_ps(x));
  _mm512_storeu_si512(out, (__m512i)b);
}
#endif

// Rows [i0, i1) of x [.][cols] rounded to bf16 into xb (ldxb >= cols, a multiple of 32; the padding
// of each row is zero, so the kernel's tail step reads zeros past cols).
inline void round_rows(const float* x, int64_t cols, int64_t i0, int64_t i1, uint16_t* xb, int64_t ldxb) {
  for (int64_t i = i0; i < i1; ++i) {
    const float* xr = x + i * cols;
    uint16_t* o = xb + i * ldxb;
    int64_t c = 0;
    for (; c + 32 <= cols; c += 32) round32(xr + c, o + c);
    for (; c < cols; ++c) o[c] = to_bf16_scalar(xr[c]);
    for (; c < ldxb; ++c) o[c] = 0;
  }
}

// Weight rows a tile step prefetches alongside its own loads: n rows, step bytes apart, from p.
// DRAM-fed batches (the serving steps: 16-64 rows against 0.6-57 MB of weights) otherwise wait on the
// hardware prefetcher, which sees R short streams of cols * 2 bytes per panel and barely ramps up:
// SmolLM2's shapes at m = 16 ran at 130-180 GOPS per core from DRAM against 390-480 from cache.
// Two prefetches per panel: "far", into L2, the panel kPrefetchRows rows ahead, spread over the panel's
// first steps; "near", into L1, the next panel, in the panel's last step (from L2 by then, so it arrives
// in time without sitting in L1 while a long activation panel streams through it). Measured on one
// core, m = 16, interleaved medians: 152 -> 425 GOPS (q/o), 173 -> 436 (the output matrix); BENCHMARKS §1ac.
struct Ahead {
  const uint8_t* p = nullptr;
  int64_t step = 0;
  int n = 0;
};

// y[i * ldy + r] = W[r] . xb[i] for R weight rows (w: row 0, rb bytes apart) and M activation rows.
template <int R, int M>
inline void tile(const uint8_t* w, int64_t rb, int64_t cols, const uint16_t* x, int64_t ldx, float* y,
                 int64_t ldy, Ahead far = {}, Ahead near = {}) {
  Acc acc[R][M];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) acc[r][i] = acc_zero();
  int64_t c = 0;
  for (; c + kBK <= cols; c += kBK) {
    BV wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = load32(w + r * rb + 2 * c);
    for (int j = 0; j < far.n; ++j) prefetch_l2(far.p + j * far.step + 2 * c);
    for (int j = 0; j < near.n; ++j) prefetch_l1(near.p + j * near.step + 2 * c);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      const BV xv = load32(x + i * ldx + c);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][i] = dp(acc[r][i], wv[r], xv);
    }
  }
  if (c < cols) {  // ragged tail: masked weight loads; the activation panel is zero-padded
    const int n = int(cols - c);
    BV wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = load_tail(w + r * rb + 2 * c, n);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      const BV xv = load32(x + i * ldx + c);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][i] = dp(acc[r][i], wv[r], xv);
    }
  }
  if constexpr (R == 4) {
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) store4(y + i * ldy, acc[0][i], acc[1][i], acc[2][i], acc[3][i]);
  } else {
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < M; ++i) y[i * ldy + r] = reduce(acc[r][i]);
  }
}

// Weight rows [r, r + R) against activation rows [i0, i1), kBM at a time (the last step narrower).
template <int R>
inline void rows(const FloatGemmArgs& g, int64_t r, int64_t i0, int64_t i1) {
  const uint8_t* w = g.w + r * g.row_bytes;
  int64_t i = i0;
  // Steps t < min(steps, R) prefetch rows t, t + that, ... of the panel kPrefetchRows ahead, so its R rows
  // are requested once and spread over the panel's time (a burst of R * cols / 32 lines in one step
  // would overrun the core's outstanding-miss slots and be dropped).
  const int steps = int((i1 - i0 + kBM - 1) / kBM), share = steps < R ? steps : R;
  auto far = [&](int t) {
    return t < share ? Ahead{w + (kPrefetchRows + t) * g.row_bytes, share * g.row_bytes, (R - t + share - 1) / share}
                     : Ahead{};
  };
  auto near = [&](int t) { return t == steps - 1 ? Ahead{w + R * g.row_bytes, g.row_bytes, R} : Ahead{}; };
  int t = 0;
  for (; i + kBM <= i1; i += kBM, ++t)
    tile<R, kBM>(w, g.row_bytes, g.cols, g.xb + i * g.ldxb, g.ldxb, g.y + i * g.ldy + r, g.ldy, far(t), near(t));
  const Ahead pf = far(t), pn = near(t);
  const uint16_t* x = g.xb + i * g.ldxb;
  float* y = g.y + i * g.ldy + r;
  switch (i1 - i) {
    case 5: return tile<R, 5>(w, g.row_bytes, g.cols, x, g.ldxb, y, g.ldy, pf, pn);
    case 4: return tile<R, 4>(w, g.row_bytes, g.cols, x, g.ldxb, y, g.ldy, pf, pn);
    case 3: return tile<R, 3>(w, g.row_bytes, g.cols, x, g.ldxb, y, g.ldy, pf, pn);
    case 2: return tile<R, 2>(w, g.row_bytes, g.cols, x, g.ldxb, y, g.ldy, pf, pn);
    case 1: return tile<R, 1>(w, g.row_bytes, g.cols, x, g.ldxb, y, g.ldy, pf, pn);
    default: return;
  }
}

// The table entry (KernelTable::bf16_gemm): BF16 weights, g.xb/g.ldxb the rounded activations (g.x
// unused), y overwritten for r in [r0, r1), i in [i0, i1).
inline void gemm(const FloatGemmArgs& g, int64_t r0, int64_t r1, int64_t i0, int64_t i1) {
  int64_t r = r0;
  for (; r + kBR <= r1; r += kBR) rows<kBR>(g, r, i0, i1);
  for (; r < r1; ++r) rows<1>(g, r, i0, i1);
}

// The table entry (KernelTable::bf16_round_acts): rows [i0, i1) of x rounded into xb (see round_rows).
inline void round_acts(const float* x, int64_t cols, int64_t i0, int64_t i1, uint16_t* xb, int64_t ldxb) {
  round_rows(x, cols, i0, i1, xb, ldxb);
}

}  // namespace bf16k
}  // namespace
}  // namespace tinfer

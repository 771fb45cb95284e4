// AVX-512 VNNI quantized GEMM on the 16-row tile layout (packed_layout.h), one instantiation per packed
// format (templated on its Geometry): one vpdpbusd multiplies a 64-byte k-quad (16 weight rows x 4 k, u8
// codes) by 4 broadcast activation bytes (s8), giving 16 rows' int32 partial sums. MR activation rows
// share each weight load, so prefill reuses weights in registers. Per format only two things differ:
// how a sub-block's codes are unpacked to 8 quad planes (by code width) and how its scales become
// per-row multipliers (by arithmetic family, packed::Scales): both in common/gemm_q.h, shared with AVX2.
// GCC 12's AVX-512 headers build "undefined" vectors that -W(maybe-)uninitialized flags falsely.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include "kernels/cpu/common/gemm_q.h"
#include "kernels/cpu/common/x86_ops.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_format.h"

namespace tinfer {
namespace {

using packed::Geometry;
using packed::Scales;

// Weights stream from DRAM in decode steps. With one or two activation rows per pass the interleaved
// layout (packed_layout.h) is one sequential stream that the hardware prefetchers follow at the full
// read bandwidth, and software prefetch only costs (TinyLlama decode step, Zen 4, fast memory mode:
// Q8_0 17.4-18.1 ms without vs 21.5-23.3 ms with a 2 KiB prefetch; Q4_0 slow mode 15.5 vs 19.8 ms).
// With 4+ rows (batched decode) a block takes ~8x longer to compute and the demand loads of the
// first group's pass stall on L1 misses. Two prefetches per line of the first pass: 2 KiB ahead into L1
// (NTA: the slice is reread only from L1), which took a 16-row Q8_0 step from 74-80 to ~60 ms (Zen 4),
// and 16 KiB ahead into L2: DRAM's lead (one core keeps ~20 GB/s x ~120 ns = 2.5 KB in flight, more than
// its L1 miss slots hold), and for short tiles (SmolLM2's 576 columns: 9.8 KB) the start of the tiles
// to come, which no hardware prefetcher predicts: +2-23% at m = 16-64 on those shapes from DRAM, one
// Zen 5 core (-1..-3% on the 26 KB tiles of the down projection); -9% at m = 4 and flat at m >= 16 on
// TinyLlama's 2048-column tiles; prefill unchanged (BENCHMARKS §1ac). `far`: the L2 prefetch's distance in
// bytes. The paired path (tile_rows2) aims it at the next pair's same blocks, 2 tiles on (+6-17% on TinyLlama's
// tiles and SmolLM2's down projection at m = 16-64 from DRAM, flat elsewhere: §1ad).
template <int MR>
inline void prefetch_weights(const uint8_t* qb, int qbytes, int64_t far = 16384) {
  if constexpr (MR > 2) {
#pragma GCC unroll 8
    for (int c = 0; c < qbytes; c += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(qb + far + c), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(qb + 2048 + c), _MM_HINT_NTA);
    }
  }
}

inline __m512i load(const uint8_t* p) { return _mm512_loadu_si512(p); }
inline __m512i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}
inline __m512i dp(__m512i acc, __m512i w, const int8_t* x) { return _mm512_dpbusd_epi32(acc, w, bcast4(x)); }

// common/gemm_q.h's operations: x86_ops.h's at 16 lanes (one zmm holds a tile's 16 rows), and VNNI's dot.
struct Zmm : Simd {
  static constexpr bool kQ8Signed = false;  // vpdpbusd takes Q8_0's u8 codes q+128: chain_init corrects
  template <int bits>
  static I dot(I acc, I w, const int8_t* x) { return dp(acc, w, x); }
};
using V = Zmm;

// Decode: one row's int dots over the two halves of a sub-block (quads 0-3 and 4-7: two chains for
// latency, which are also the two 16-element halves), each from its chain start.
// (Init = false: both chains start at 0, the caller applies the codes' offset.)
template <Geometry G, bool Init = true>
inline void dot_halves(const uint8_t* q, const QActs& a, const uint8_t* blk, int r, __m512i& lo, __m512i& hi) {
  const int8_t* x = a.q(blk, r);
  if constexpr (Init) lo = chain_init<V, G>(a, blk, r, 0), hi = chain_init<V, G>(a, blk, r, 1);
  else lo = hi = _mm512_setzero_si512();
  if constexpr (G.bits == 4) {
    // Multiply the high nibbles in place (v & 0xf0 = 16 * code, no shift per plane); one exact
    // arithmetic shift of that chain's sum per sub-block removes the 16.
    const __m512i lo4 = _mm512_set1_epi8(0x0f), hi4 = _mm512_set1_epi8(char(0xf0));
    __m512i hi16 = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i v = load(q + 64 * c);
      lo = dp(lo, _mm512_and_si512(v, lo4), x + 4 * c);
      hi16 = dp(hi16, _mm512_and_si512(v, hi4), x + 16 + 4 * c);
    }
    hi = _mm512_add_epi32(hi, _mm512_srai_epi32(hi16, 4));
  } else {
    __m512i w[4];
    unpack_half<V, G.bits, 0>(q, w);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) lo = dp(lo, w[i], x + 4 * i);
    unpack_half<V, G.bits, 1>(q, w);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) hi = dp(hi, w[i], x + 16 + 4 * i);
  }
}

// Q2_K (16-element scales and mins, 2-bit codes): each half's dot fits 16 bits (|dot| <= 16 * 3 * 127), so a
// row's two half dots are paired in 16-bit lanes and scaled by one vpmaddwd with the rows' (sc_lo, sc_hi) pairs,
// its mins by one more, of (mn_lo, mn_hi) with the activation's half sums (S_lo, S_hi); then one float fold per
// sub-block: facc += da * (d * isc - dmin * imn). (Q3_K's half dots fit as well, but without mins to fold
// it measured no faster than per-half folds.)
template <Geometry G>
inline __m512 fold_pairs(__m512 facc, __m512i lo, __m512i hi, __m512i sc, __m512i mn, const BlockScales<V, G>& bs,
                         const QActs& a, const uint8_t* blk, int r) {
  static_assert(G.scales == Scales::k_scmn16 && G.bits == 2);
  const __m512i dots = _mm512_mask_blend_epi16(__mmask32(0xAAAAAAAA), lo, _mm512_slli_epi32(hi, 16));
  int32_t s16;
  std::memcpy(&s16, a.s16(blk, r), 4);
  const __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_madd_epi16(dots, sc)), bs.d);
  const __m512i imn = _mm512_madd_epi16(mn, _mm512_set1_epi32(s16));
  return _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_cvtepi32_ps(imn), bs.m, f), _mm512_set1_ps(*a.d(blk, r)), facc);
}

// Rows r0..r0+MR of an activation group against sub-block s of a tile block (q: its codes, blk: its
// activation block, bs: the tile block's scales).
template <Geometry G, int MR>
inline void sub_rows(const uint8_t* q, const QActs& a, const uint8_t* blk, int r0, const BlockScales<V, G>& bs, int s,
                     __m512* facc) {
  if constexpr (MR > 1 && G.scales == Scales::k_scmn16) {
    const __m512i pr = bs.pairs(s);
    const __m512i sc = _mm512_and_si512(pr, _mm512_set1_epi16(15)), mn = _mm512_srli_epi16(pr, 4);
    __m512i lo[MR], hi[MR];
    half_dots<V, G, MR, 0>(q, a, blk, r0, lo);
    half_dots<V, G, MR, 1>(q, a, blk, r0, hi);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) facc[r] = fold_pairs<G>(facc[r], lo[r], hi[r], sc, mn, bs, a, blk, r0 + r);
    return;
  }
  const SubScale<V> ss = bs.sub(s);
  if constexpr (MR == 1) {
    static_assert(!G.sub16());  // (gemv_k)
    __m512i lo, hi;
    dot_halves<G>(q, a, blk, r0, lo, hi);
    facc[0] = fold<V, G>(facc[0], _mm512_add_epi32(lo, hi), ss, a, blk, r0, 0);
  } else if constexpr (!G.sub16()) {
    __m512i w[8];
    unpack_half<V, G.bits, 0>(q, w);
    unpack_half<V, G.bits, 1>(q, w + 4);
    // j outer, r inner: MR independent vpdpbusd chains in flight (latency ~5 cycles each).
    __m512i acc[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) acc[r] = chain_init<V, G>(a, blk, r0 + r, 0);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) acc[r] = dp(acc[r], w[j], a.q(blk, r0 + r) + 4 * j);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) facc[r] = fold<V, G>(facc[r], acc[r], ss, a, blk, r0 + r, 0);
  } else {
    // 16-element scales: each half's chains are folded before the next half starts (registers).
    __m512i acc[MR];
    half_dots<V, G, MR, 0>(q, a, blk, r0, acc);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) facc[r] = fold<V, G>(facc[r], acc[r], ss, a, blk, r0 + r, 0);
    half_dots<V, G, MR, 1>(q, a, blk, r0, acc);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) facc[r] = fold<V, G>(facc[r], acc[r], ss, a, blk, r0 + r, 1);
  }
}

// Two tiles (32 weight rows) against rows r0..r0+MR of a group, for formats with one scale per 32 elements
// (!sub16: Q8_0, Q4_0/1, Q5_0/1, Q4_K, Q5_K): each activation broadcast feeds both tiles' vpdpbusd. With
// one tile per broadcast the loop issues a broadcast load per dot, and on a core with two 512-bit dot
// pipes (Zen 5: 2 vpdpbusd per cycle) that load stream, not the dots, set the pace: a register model of
// this loop ran 5.2 G dots/s per core with one tile and 6.4 with two (8.2 is the chain peak), and the
// GEMMs of a 128-row prefill ran at 46% of the probe's int8 peak.
template <Geometry G, int MR>
inline void sub_rows2(const uint8_t* q0, const uint8_t* q1, const QActs& a, const uint8_t* blk, int r0,
                      const SubScale<V>& s0, const SubScale<V>& s1, __m512* f0, __m512* f1) {
  static_assert(!G.sub16());
  // Row r0's codes as an opaque base, so every broadcast below is base + an immediate: given a.q(blk, r0 + r)
  // GCC hoists the 32 offsets (r0 + r) * 32 + 16 h + 4 i as loop invariants, spills them, and adds a load
  // per broadcast.
  const int8_t* x = a.q(blk, r0);
  asm("" : "+r"(x));
  __m512i acc0[MR], acc1[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = chain_init<V, G>(a, blk, r0 + r, 0);
  if constexpr (G.bits == 8) {
    // Two chains per row and tile, one per half (quads 0-3 and 4-7), summed before the fold: 16 chains of 4
    // dots instead of 8 of 8, so a sub-block's latency (a chain's dots are dependent) no longer sets the
    // pace. Codes of fewer bits keep one chain: their unpacking needs the registers the second chain takes.
    __m512i hi0[MR], hi1[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) hi0[r] = hi1[r] = _mm512_setzero_si512();
    __m512i w0[8], w1[8];
    unpack_half<V, G.bits, 0>(q0, w0), unpack_half<V, G.bits, 0>(q1, w1);
    unpack_half<V, G.bits, 1>(q0, w0 + 4), unpack_half<V, G.bits, 1>(q1, w1 + 4);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m512i xl = bcast4(x + 32 * r + 4 * i), xh = bcast4(x + 32 * r + 16 + 4 * i);
        acc0[r] = _mm512_dpbusd_epi32(acc0[r], w0[i], xl);
        acc1[r] = _mm512_dpbusd_epi32(acc1[r], w1[i], xl);
        hi0[r] = _mm512_dpbusd_epi32(hi0[r], w0[4 + i], xh);
        hi1[r] = _mm512_dpbusd_epi32(hi1[r], w1[4 + i], xh);
      }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
      acc0[r] = _mm512_add_epi32(acc0[r], hi0[r]), acc1[r] = _mm512_add_epi32(acc1[r], hi1[r]);
  } else {
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m512i w0[4], w1[4];
      if (h == 0) unpack_half<V, G.bits, 0>(q0, w0), unpack_half<V, G.bits, 0>(q1, w1);
      else unpack_half<V, G.bits, 1>(q0, w0), unpack_half<V, G.bits, 1>(q1, w1);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
          const __m512i xb = bcast4(x + 32 * r + 16 * h + 4 * i);
          acc0[r] = _mm512_dpbusd_epi32(acc0[r], w0[i], xb);
          acc1[r] = _mm512_dpbusd_epi32(acc1[r], w1[i], xb);
        }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    f0[r] = fold<V, G>(f0[r], acc0[r], s0, a, blk, r0 + r, 0);
    f1[r] = fold<V, G>(f1[r], acc1[r], s1, a, blk, r0 + r, 0);
  }
}

// Decode (one row) of the K-quants: the per-sub-block scale work is what limits the low-bit formats, so
// the sub-block scales are applied in integers and the float work is one convert + FMA per sub-block
// into a per-tile-block sum, scaled by d once per tile block. 32-element scales (Q4_K, Q5_K): one vpmulld;
// their mins, one FMA of the activation block's d * sum(q). 16-element scales: the two halves' dots by
// one vpmaddwd on (lo, hi) 16-bit pairs when they fit 16 bits (codes <= 3 bits: |dot| <= 16 * 4 * 127),
// else by two vpmulld; Q2_K's mins by one more vpmaddwd of its (mn_lo, mn_hi) with (S_lo, S_hi).
template <Geometry G>
inline void gemv_k(const uint8_t* tile, const QActs& a, int64_t g, int r0, int64_t b0, int64_t b1, float* acc_io) {
  __m512 facc = _mm512_loadu_ps(acc_io);
  for (int64_t b = b0; b < b1; ++b) {
    const uint8_t* qb = tile + G.quant_offset(b);
    const BlockScales<V, G> bs(tile + G.scale_offset(b), 0);
    __m512 acc_s = _mm512_setzero_ps(), acc_m = _mm512_setzero_ps();
    for (int s = 0; s < G.subs(); ++s) {
      const uint8_t* blk = a.block(g, b * G.subs() + s);
      __m512i lo, hi, isc;
      // Codes of <= 3 bits: the offset goes on the 16-bit pairs below (a shift and a subtract from the
      // half sums' pair, instead of two integer broadcasts from scalar registers).
      constexpr bool pair_corr = G.bits <= 3 && G.corr != 0;
      dot_halves<G, !pair_corr>(qb + s * G.sub_bytes(), a, blk, r0, lo, hi);
      const __m512 da = _mm512_set1_ps(*a.d(blk, r0));
      if constexpr (G.scales == Scales::k_sc_mn) {
        isc = _mm512_mullo_epi32(_mm512_add_epi32(lo, hi), V::u8x(bs.sc + G.sc_at + 16 * s));
        acc_m = _mm512_fmadd_ps(_mm512_cvtepi32_ps(V::u8x(bs.sc + G.mn_at + 16 * s)), _mm512_set1_ps(*a.ds(blk, r0)),
                                acc_m);
      } else if constexpr (G.bits <= 3) {
        const __m512i pr = bs.pairs(s);
        __m512i dots = _mm512_mask_blend_epi16(__mmask32(0xAAAAAAAA), lo, _mm512_slli_epi32(hi, 16));
        if constexpr (pair_corr) {  // + corr * (S_lo, S_hi): |raw dot| <= 16 * 7 * 127 and the sum fit 16 bits
          int32_t s16;
          std::memcpy(&s16, a.s16(blk, r0), 4);
          const __m512i sums = _mm512_set1_epi32(s16);
          if constexpr (std::has_single_bit(unsigned(-G.corr)))
            dots = _mm512_sub_epi16(dots, _mm512_slli_epi16(sums, std::countr_zero(unsigned(-G.corr))));
          else
            dots = _mm512_add_epi16(dots, _mm512_mullo_epi16(sums, _mm512_set1_epi16(int16_t(G.corr))));
        }
        if constexpr (G.scales == Scales::k_scmn16) {
          isc = _mm512_madd_epi16(dots, _mm512_and_si512(pr, _mm512_set1_epi16(15)));
          int32_t s16;
          std::memcpy(&s16, a.s16(blk, r0), 4);
          const __m512i imn = _mm512_madd_epi16(_mm512_srli_epi16(pr, 4), _mm512_set1_epi32(s16));
          acc_m = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imn), da, acc_m);
        } else {
          isc = _mm512_madd_epi16(dots, pr);
        }
      } else {
        static_assert(G.scales == Scales::k_sc16);
        const __m512i pr = bs.pairs(s);
        isc = _mm512_add_epi32(_mm512_mullo_epi32(lo, _mm512_srai_epi32(_mm512_slli_epi32(pr, 16), 16)),
                               _mm512_mullo_epi32(hi, _mm512_srai_epi32(pr, 16)));
      }
      acc_s = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isc), da, acc_s);
    }
    facc = _mm512_fmadd_ps(acc_s, bs.d, facc);
    if constexpr (G.scales == Scales::k_sc_mn || G.scales == Scales::k_scmn16) facc = _mm512_fmadd_ps(acc_m, bs.m, facc);
  }
  _mm512_storeu_ps(acc_io, facc);
}

// Rows r0..r0+MR of activation group g, for tile blocks [b0, b1) of one tile: acc[row][0..16) += the
// blocks' contributions. acc holds MR rows of 16 floats and persists across block ranges.
template <Geometry G, int MR>
inline void tile_rows(const uint8_t* tile, const QActs& a, int64_t g, int r0, int64_t b0, int64_t b1, float* acc_io,
                      bool prefetch) {
  if constexpr (MR == 1 && G.block > packed::kSub) {
    gemv_k<G>(tile, a, g, r0, b0, b1, acc_io);
  } else {
    __m512 facc[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) facc[r] = _mm512_loadu_ps(acc_io + 16 * r);
    for (int64_t b = b0; b < b1; ++b) {
      const uint8_t* qb = tile + G.quant_offset(b);
      const BlockScales<V, G> bs(tile + G.scale_offset(b), 0);
      for (int s = 0; s < G.subs(); ++s) {
        const uint8_t* q = qb + s * G.sub_bytes();
        if (prefetch) prefetch_weights<MR>(q, int(G.sub_bytes()));  // (past tile ends too: the next tile follows)
        sub_rows<G, MR>(q, a, a.block(g, b * G.subs() + s), r0, bs, s, facc);
      }
    }
    for (int r = 0; r < MR; ++r) _mm512_storeu_ps(acc_io + 16 * r, facc[r]);
  }
}

// Rows 0..n of group g over blocks [b0, b1), in micro-kernels of 8/4/2/1 rows (only 4+ rows prefetch).
template <Geometry G>
inline void group_rows(const uint8_t* tile, const QActs& a, int64_t g, int n, int64_t b0, int64_t b1, float* acc,
                       bool prefetch) {
  if (n == kActGroup) return tile_rows<G, 8>(tile, a, g, 0, b0, b1, acc, prefetch);
  int r0 = 0;
  if (n >= 4) tile_rows<G, 4>(tile, a, g, 0, b0, b1, acc, prefetch), r0 = 4;
  if (n - r0 >= 2) tile_rows<G, 2>(tile, a, g, r0, b0, b1, acc + 16 * r0, false), r0 += 2;
  if (n - r0 >= 1) tile_rows<G, 1>(tile, a, g, r0, b0, b1, acc + 16 * r0, false);
}

// Two tiles at once (sub_rows2): rows r0..r0+MR of group g over tile blocks [b0, b1); acc0 / acc1 as tile_rows'.
template <Geometry G, int MR>
inline void tile_rows2(const uint8_t* tile0, const uint8_t* tile1, const QActs& a, int64_t g, int r0, int64_t b0,
                       int64_t b1, float* acc0, float* acc1, int64_t far) {
  __m512 f0[MR], f1[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) f0[r] = _mm512_loadu_ps(acc0 + 16 * r), f1[r] = _mm512_loadu_ps(acc1 + 16 * r);
  for (int64_t b = b0; b < b1; ++b) {
    const uint8_t *qb0 = tile0 + G.quant_offset(b), *qb1 = tile1 + G.quant_offset(b);
    const BlockScales<V, G> bs0(tile0 + G.scale_offset(b), 0), bs1(tile1 + G.scale_offset(b), 0);
    for (int s = 0; s < G.subs(); ++s) {
      const uint8_t *q0 = qb0 + s * G.sub_bytes(), *q1 = qb1 + s * G.sub_bytes();
      if (far) prefetch_weights<4>(q0, int(G.sub_bytes()), far), prefetch_weights<4>(q1, int(G.sub_bytes()), far);
      sub_rows2<G, MR>(q0, q1, a, a.block(g, b * G.subs() + s), r0, bs0.sub(s), bs1.sub(s), f0, f1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) _mm512_storeu_ps(acc0 + 16 * r, f0[r]), _mm512_storeu_ps(acc1 + 16 * r, f1[r]);
}

// Rows 0..n of group g against two tiles, 4 rows at a time (4 x 2 tiles = 8 dot chains and 8 float sums beside
// the 8 code planes of a half; Q8_0's split chains and 16 planes go past the 32 zmm registers and spill a
// few, measured faster all the same: §1ad), then 2 and 1.
template <Geometry G>
inline void group_rows2(const uint8_t* tile0, const uint8_t* tile1, const QActs& a, int64_t g, int n, int64_t b0,
                        int64_t b1, float* acc0, float* acc1, int64_t far) {
  int r0 = 0;
  for (; r0 + 4 <= n; r0 += 4)
    tile_rows2<G, 4>(tile0, tile1, a, g, r0, b0, b1, acc0 + 16 * r0, acc1 + 16 * r0, r0 == 0 ? far : 0);
  if (n - r0 >= 2) tile_rows2<G, 2>(tile0, tile1, a, g, r0, b0, b1, acc0 + 16 * r0, acc1 + 16 * r0, 0), r0 += 2;
  if (n - r0 >= 1) {
    // A lone row of a 256-element K-quant takes gemv_k (another float order), as in the one-tile loop: a tile
    // gives the same bits whether a work item paired it or not (items depend on the thread schedule).
    if constexpr (G.block > packed::kSub) {
      tile_rows<G, 1>(tile0, a, g, r0, b0, b1, acc0 + 16 * r0, false);
      tile_rows<G, 1>(tile1, a, g, r0, b0, b1, acc1 + 16 * r0, false);
    } else {
      tile_rows2<G, 1>(tile0, tile1, a, g, r0, b0, b1, acc0 + 16 * r0, acc1 + 16 * r0, 0);
    }
  }
}

// Per tile, the blocks are walked in slices small enough to stay in L1 (kSliceBytes of quants), and
// every activation group runs over a slice before the next slice: the tile's weights then come from
// DRAM/L2 once however many groups there are, and the first group's pass prefetches the slices ahead,
// so a batched-decode step (m = 8..64, weights streamed from DRAM) overlaps the weight stream with
// compute instead of alternating between them (measured: m = 16 took memory time + compute time).
template <Geometry G>
void gemm(const GemmArgs& ga, int64_t t0, int64_t t1, int64_t i0, int64_t i1) {
  constexpr int64_t kSliceBytes = 4096;
  constexpr int64_t slice = std::max<int64_t>(1, kSliceBytes / G.quant_bytes());
  const int64_t nb = ga.a.nb / G.subs(), rows = i1 - i0;
  const int64_t step = rows <= kActGroup ? nb : slice;  // one group: nothing rereads a slice
  // Batches (4+ rows) of the 32-element-scale formats take tiles in pairs (sub_rows2); decode and small
  // batches keep one tile at a time: their weights stream from DRAM as one sequential stream (prefetch_weights).
  constexpr bool kPairable = !G.sub16();
  const bool pairs = kPairable && rows >= 4;
  alignas(64) float acc[2 * kMaxGemmRows * 16];
  for (int64_t t = t0; t < t1;) {
    const int nt = pairs && t + 1 < t1 ? 2 : 1;
    const uint8_t* tile = ga.w + t * ga.tile_bytes;
    float* acc1 = acc + kMaxGemmRows * 16;
    std::memset(acc, 0, sizeof(float) * 16 * size_t(rows));
    if (nt == 2) std::memset(acc1, 0, sizeof(float) * 16 * size_t(rows));
    for (int64_t b0 = 0; b0 < nb; b0 += step) {
      const int64_t b1 = std::min(nb, b0 + step);
      for (int64_t g = i0 / kActGroup; g * kActGroup < i1; ++g) {
        const int n = int(std::min<int64_t>(kActGroup, i1 - g * kActGroup));
        const int64_t at = 16 * (g * kActGroup - i0);
        const bool first = g * kActGroup == i0;
        if constexpr (kPairable) {
          if (nt == 2) {
            group_rows2<G>(tile, tile + ga.tile_bytes, ga.a, g, n, b0, b1, acc + at, acc1 + at,
                           first ? 2 * ga.tile_bytes : 0);  // the next pair's same blocks
            continue;
          }
        }
        group_rows<G>(tile, ga.a, g, n, b0, b1, acc + at, first);
      }
    }
    for (int k = 0; k < nt; ++k, ++t) {
      const int valid = int(std::min<int64_t>(packed::kTileRows, ga.rows - t * packed::kTileRows));
      const __mmask16 mask = __mmask16((1u << valid) - 1);
      const float* a_k = acc + k * kMaxGemmRows * 16;
      float* y = ga.y + t * packed::kTileRows;
      for (int64_t i = 0; i < rows; ++i) _mm512_mask_storeu_ps(y + (i0 + i) * ga.ldy, mask, _mm512_load_ps(a_k + 16 * i));
    }
  }
}

}  // namespace

std::array<GemmFn, packed::kNumFormats> avx512_gemms() {
  return gemms_per_format([]<Geometry G>() -> GemmFn { return gemm<G>; });
}

}  // namespace tinfer

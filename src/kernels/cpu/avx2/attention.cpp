// AVX2 (+FMA, F16C) paged attention: the AVX-512 kernel's structure at 8 floats. Block size 16 (a tile's
// scores are two ymm per head), head_dim a multiple of 8; other shapes go to the portable kernel. K is
// stored transposed ([head_dim][16]), so each d is two 8-wide FMAs per head with no horizontal sums;
// heads of a GQA group go 4 at a time sharing each K and V load, their accumulators in registers
// (template head counts); online softmax with one rescale per tile; fp16 widened on load (vcvtph2ps).
#include <immintrin.h>

#define TINFER_VEC_FLOATS 8
#include "kernels/cpu/common/vec.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/cpu/common/attention_item.h"
#include "kernels/kernel_table.h"

namespace tinfer {

namespace {

// exp on 8 lanes: vec.h's vexp (one exp for every kernel), as a ymm.
inline __m256 exp8(__m256 x) { return (__m256)vexp((vf)x); }

inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

inline float hmax8(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
}
inline float hsum8(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}

// Scores of GN heads (h0..h0+GN) against one block, folded into the running max/sum (online softmax):
// p[g][0..16) = exp(score - new max), r[g] = exp(old max - new max) rescales what was accumulated.
// Slots 0-7 and 8-15 are two FMA chains per head; with 1-2 heads, even and odd d are two more (four
// heads already give eight chains, and 16 ymm registers hold no more).
template <class T, int GN>
inline void block_scores(const AttnItem& it, const T* kt, __m256 valid_lo, __m256 valid_hi, int64_t h0, float* m,
                         float* l, float (*p)[16], float* r, const T* next_k) {
  constexpr int NC = GN <= 2 ? 2 : 1;
  const int64_t hd = it.hd;
  const float* q = it.q + h0 * hd;
  __m256 lo[NC][GN], hi[NC][GN];
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c)
#pragma GCC unroll 4
    for (int g = 0; g < GN; ++g) lo[c][g] = hi[c][g] = _mm256_setzero_ps();
  for (int64_t d = 0; d < hd; d += 2) {
    if (next_k) {  // the next block's K rows d, d+1 (a line each in f32, one line for both in f16)
      _mm_prefetch(reinterpret_cast<const char*>(next_k + d * 16), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(next_k + d * 16 + 16), _MM_HINT_T0);
    }
#pragma GCC unroll 2
    for (int u = 0; u < 2; ++u) {
      const __m256 k0 = load8(kt + (d + u) * 16), k1 = load8(kt + (d + u) * 16 + 8);
      const int c = NC == 2 ? u : 0;
#pragma GCC unroll 4
      for (int g = 0; g < GN; ++g) {
        const __m256 qd = _mm256_broadcast_ss(q + g * hd + d + u);
        lo[c][g] = _mm256_fmadd_ps(qd, k0, lo[c][g]);
        hi[c][g] = _mm256_fmadd_ps(qd, k1, hi[c][g]);
      }
    }
  }
  const __m256 scale = _mm256_set1_ps(it.scale), ninf = _mm256_set1_ps(-INFINITY);
  __m256 sl[GN], sh[GN];
  alignas(32) float mx[8], dm[8] = {};
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g) {
    __m256 a = lo[0][g], b = hi[0][g];
    if constexpr (NC == 2) a = _mm256_add_ps(a, lo[1][g]), b = _mm256_add_ps(b, hi[1][g]);
    sl[g] = _mm256_blendv_ps(ninf, _mm256_mul_ps(a, scale), valid_lo);
    sh[g] = _mm256_blendv_ps(ninf, _mm256_mul_ps(b, scale), valid_hi);
    mx[g] = std::max(m[h0 + g], hmax8(_mm256_max_ps(sl[g], sh[g])));
    dm[g] = m[h0 + g] - mx[g];  // -inf before the first block: r = 0
    m[h0 + g] = mx[g];
  }
  alignas(32) float rr[8];
  _mm256_store_ps(rr, exp8(_mm256_load_ps(dm)));
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g) {
    const __m256 mg = _mm256_set1_ps(mx[g]);
    const __m256 el = _mm256_and_ps(valid_lo, exp8(_mm256_sub_ps(sl[g], mg)));
    const __m256 eh = _mm256_and_ps(valid_hi, exp8(_mm256_sub_ps(sh[g], mg)));
    r[g] = rr[g];
    l[h0 + g] = l[h0 + g] * rr[g] + hsum8(_mm256_add_ps(el, eh));
    _mm256_store_ps(p[g], el);
    _mm256_store_ps(p[g] + 8, eh);
  }
}

// O[h0+g][c0..c0+8*CW) = r[g] * O + P[g] · V over one block's len slots: each V row chunk is loaded once
// for all GN heads (GN*CW accumulators + CW V vectors stay in registers).
template <class T, int GN, int CW>
inline void block_pv(const AttnItem& it, const T* v0, int64_t vstride, int64_t len, int64_t h0, int64_t c0,
                     const float (*p)[16], const float* r, const T* next_v0) {
  __m256 acc[GN][CW];
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g)
#pragma GCC unroll 4
    for (int c = 0; c < CW; ++c)
      acc[g][c] = _mm256_mul_ps(_mm256_loadu_ps(it.o + (h0 + g) * it.hd + c0 + 8 * c), _mm256_set1_ps(r[g]));
  for (int64_t j = 0; j < len; ++j) {
    const T* vj = v0 + j * vstride + c0;
    if (next_v0)  // the next block's V row j of this kv head, spread over this loop
      for (int64_t c = 0; c < it.hd * int64_t(sizeof(T)); c += 64)
        _mm_prefetch(reinterpret_cast<const char*>(next_v0 + j * vstride) + c, _MM_HINT_T0);
    __m256 vv[CW];
#pragma GCC unroll 4
    for (int c = 0; c < CW; ++c) vv[c] = load8(vj + 8 * c);
#pragma GCC unroll 4
    for (int g = 0; g < GN; ++g) {
      const __m256 w = _mm256_broadcast_ss(&p[g][j]);
#pragma GCC unroll 4
      for (int c = 0; c < CW; ++c) acc[g][c] = _mm256_fmadd_ps(w, vv[c], acc[g][c]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g)
#pragma GCC unroll 4
    for (int c = 0; c < CW; ++c) _mm256_storeu_ps(it.o + (h0 + g) * it.hd + c0 + 8 * c, acc[g][c]);
}

// next_k / next_v0: the next block's K tile and V slot 0 of this kv head, prefetched while this block
// computes (nullptr: none, or not the first head group).
template <class T, int GN>
inline void block_heads(const AttnItem& it, const T* kt, const T* v0, int64_t vstride, int64_t len, int64_t h0,
                        float* m, float* l, const T* next_k, const T* next_v0) {
  alignas(32) float p[GN][16];
  float r[GN];
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), n = _mm256_set1_epi32(int(len));
  const __m256 valid_lo = _mm256_castsi256_ps(_mm256_cmpgt_epi32(n, iota));
  const __m256 valid_hi = _mm256_castsi256_ps(_mm256_cmpgt_epi32(n, _mm256_add_epi32(iota, _mm256_set1_epi32(8))));
  block_scores<T, GN>(it, kt, valid_lo, valid_hi, h0, m, l, p, r, next_k);
  const int64_t nv = it.hd / 8;  // 8-float chunks, two per pass (GN*2 + 2 + 1 of the 16 ymm registers)
  int64_t c = 0;
  for (; c + 2 <= nv; c += 2) block_pv<T, GN, 2>(it, v0, vstride, len, h0, 8 * c, p, r, c == 0 ? next_v0 : nullptr);
  if (c < nv) block_pv<T, GN, 1>(it, v0, vstride, len, h0, 8 * c, p, r, c == 0 ? next_v0 : nullptr);
}

struct Heads {
  template <class T, int GN>
  static void run(const AttnItem& it, const T* kt, const T* v0, int64_t vstride, int64_t len, int64_t h0, float* m,
                  float* l, const T* next_k, const T* next_v0) {
    block_heads<T, GN>(it, kt, v0, vstride, len, h0, m, l, next_k, next_v0);
  }
};

}  // namespace

AttentionFn avx2_paged_attention() { return attention_items16<Heads, 8>; }

}  // namespace tinfer

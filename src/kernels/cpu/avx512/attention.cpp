// AVX-512 paged attention: block size 16 (one zmm of scores per head), head_dim a multiple of 16; other
// shapes go to the portable kernel. Tiles are KV blocks: scores of a whole tile first (K is stored
// transposed, [head_dim][block_size], so a tile's scores are 16-wide FMAs with no horizontal sums), one
// rescale of the running output per tile, then P·V. Heads of the GQA group go 4 at a time: their scores
// share each K load, their P·V each V load.
// GCC 12's AVX-512 headers build "undefined" vectors that -W(maybe-)uninitialized flags falsely.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#define TINFER_VEC_FLOATS 16
#include "kernels/cpu/common/vec.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/cpu/common/attention_item.h"
#include "kernels/kernel_table.h"

namespace tinfer {

namespace {

// exp on 16 lanes: vec.h's vexp (one exp for every kernel), as a zmm.
inline __m512 exp16(__m512 x) { return (__m512)vexp((vf)x); }

// 16 cache elements as floats: fp16 is widened on load (vcvtph2ps), so an f16 cache reads half the bytes.
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Scores of GN heads (h0..h0+GN) against one block, folded into the running max/sum (online softmax):
// p[g][0..16) = exp(score - new max), r[g] = exp(old max - new max) rescales what was accumulated.
// The head count is a template argument so the accumulators live in registers (a runtime count
// spilled them: every FMA went through a store/load round trip, ~7x slower).
template <class T, int GN>
inline void block_scores(const AttnItem& it, const T* kt, __mmask16 valid, int64_t h0, float* m, float* l,
                         float (*p)[16], float* r, const T* next_k) {
  const int64_t hd = it.hd;
  const float* q = it.q + h0 * hd;
  __m512 s0[GN], s1[GN];  // even / odd d: two FMA chains per head
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g) s0[g] = s1[g] = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += 2) {
    const __m512 k0 = load16(kt + d * 16), k1 = load16(kt + d * 16 + 16);
    if (next_k) {  // the next block's K rows d, d+1 (a line each in f32, one line for both in f16)
      _mm_prefetch(reinterpret_cast<const char*>(next_k + d * 16), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(next_k + d * 16 + 16), _MM_HINT_T0);
    }
#pragma GCC unroll 4
    for (int g = 0; g < GN; ++g) {
      s0[g] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + d]), k0, s0[g]);
      s1[g] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + d + 1]), k1, s1[g]);
    }
  }
  // (No libm call here: a call clobbers every zmm register, spilling the other heads' state.)
  __m512 sc[GN];
  alignas(64) float mx[16], dm[16];
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g) {
    sc[g] = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), valid,
                               _mm512_mul_ps(_mm512_add_ps(s0[g], s1[g]), _mm512_set1_ps(it.scale)));
    mx[g] = std::max(m[h0 + g], _mm512_reduce_max_ps(sc[g]));
    dm[g] = m[h0 + g] - mx[g];  // -inf before the first block: r = 0
    m[h0 + g] = mx[g];
  }
  _mm512_mask_storeu_ps(r, __mmask16((1u << GN) - 1), exp16(_mm512_maskz_loadu_ps(__mmask16((1u << GN) - 1), dm)));
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g) {
    const __m512 e = _mm512_maskz_mov_ps(valid, exp16(_mm512_sub_ps(sc[g], _mm512_set1_ps(mx[g]))));
    l[h0 + g] = l[h0 + g] * r[g] + _mm512_reduce_add_ps(e);
    _mm512_store_ps(p[g], e);
  }
}

// O[h0+g][c0..c0+16*CW) = r[g] * O + P[g] · V over one block's len slots: each V row chunk is loaded
// once for all GN heads (GN*CW accumulators + CW V vectors stay in registers).
template <class T, int GN, int CW>
inline void block_pv(const AttnItem& it, const T* v0, int64_t vstride, int64_t len, int64_t h0, int64_t c0,
                     const float (*p)[16], const float* r, const T* next_v0) {
  __m512 acc[GN][CW];
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g)
#pragma GCC unroll 4
    for (int c = 0; c < CW; ++c)
      acc[g][c] = _mm512_mul_ps(_mm512_loadu_ps(it.o + (h0 + g) * it.hd + c0 + 16 * c), _mm512_set1_ps(r[g]));
  for (int64_t j = 0; j < len; ++j) {
    const T* vj = v0 + j * vstride + c0;
    if (next_v0)  // the next block's V row j of this kv head, spread over this loop
      for (int64_t c = 0; c < it.hd * int64_t(sizeof(T)); c += 64)
        _mm_prefetch(reinterpret_cast<const char*>(next_v0 + j * vstride) + c, _MM_HINT_T0);
    __m512 vv[CW];
#pragma GCC unroll 4
    for (int c = 0; c < CW; ++c) vv[c] = load16(vj + 16 * c);
#pragma GCC unroll 4
    for (int g = 0; g < GN; ++g) {
      const __m512 w = _mm512_set1_ps(p[g][j]);
#pragma GCC unroll 4
      for (int c = 0; c < CW; ++c) acc[g][c] = _mm512_fmadd_ps(w, vv[c], acc[g][c]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g)
#pragma GCC unroll 4
    for (int c = 0; c < CW; ++c) _mm512_storeu_ps(it.o + (h0 + g) * it.hd + c0 + 16 * c, acc[g][c]);
}

// next_k / next_v0: the next block's K tile and V slot 0 of this kv head, prefetched while this block
// computes (nullptr: none, or not the first head group).
template <class T, int GN>
inline void block_heads(const AttnItem& it, const T* kt, const T* v0, int64_t vstride, int64_t len, int64_t h0,
                        float* m, float* l, const T* next_k, const T* next_v0) {
  alignas(64) float p[GN][16];
  float r[GN];
  block_scores<T, GN>(it, kt, __mmask16((1u << len) - 1), h0, m, l, p, r, next_k);
  const int64_t nv = it.hd / 16;
  int64_t c = 0;
  for (; c + 4 <= nv; c += 4) block_pv<T, GN, 4>(it, v0, vstride, len, h0, 16 * c, p, r, c == 0 ? next_v0 : nullptr);
  const T* nv0 = c == 0 ? next_v0 : nullptr;
  switch (nv - c) {
    case 3: block_pv<T, GN, 3>(it, v0, vstride, len, h0, 16 * c, p, r, nv0); break;
    case 2: block_pv<T, GN, 2>(it, v0, vstride, len, h0, 16 * c, p, r, nv0); break;
    case 1: block_pv<T, GN, 1>(it, v0, vstride, len, h0, 16 * c, p, r, nv0); break;
    default: break;
  }
}

struct Heads {
  template <class T, int GN>
  static void run(const AttnItem& it, const T* kt, const T* v0, int64_t vstride, int64_t len, int64_t h0, float* m,
                  float* l, const T* next_k, const T* next_v0) {
    block_heads<T, GN>(it, kt, v0, vstride, len, h0, m, l, next_k, next_v0);
  }
};

}  // namespace

AttentionFn avx512_paged_attention() { return attention_items16<Heads, 16>; }

}  // namespace tinfer

// AVX-512 paged attention: block size 16 (one zmm of scores per head), head_dim a multiple of 16 (32 for
// an int4 V), K and V each f32, f16, int8 or int4; other shapes go to the portable kernel. Tiles are KV blocks: scores of a whole tile first (K is stored
// transposed, [head_dim][block_size], so a tile's scores are 16-wide FMAs with no horizontal sums), one
// rescale of the running output per tile, then P·V (common/attention_pv.h, shared with AVX2). Heads of the
// GQA group go 4 at a time: their scores share each K load, their P·V each V load.
// GCC 12's AVX-512 headers build "undefined" vectors that -W(maybe-)uninitialized flags falsely.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#define TINFER_VEC_FLOATS 16
#include "kernels/cpu/common/vec.h"
#include "kernels/cpu/common/x86_ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/cpu/common/attention_item.h"
#include "kernels/cpu/common/attention_pv.h"
#include "kernels/kernel_table.h"

namespace tinfer {

namespace {

// exp on 16 lanes: vec.h's vexp (one exp for every kernel), as a zmm.
inline __m512 exp16(__m512 x) { return (__m512)vexp((vf)x); }

// The cache's codes as floats, widened on load (never a separate pass): f16 through vcvtph2ps (half the
// bytes of f32), int8 sign-extended (a quarter), int4 zero-extended and split into its two nibbles.
// K row d of a block (16 slots): bytes d * row_bytes on.
template <KvDtype D>
inline __m512 k_row(const uint8_t* k, int64_t d) {
  if constexpr (D == KvDtype::f32) return _mm512_loadu_ps(k + d * 64);
  if constexpr (D == KvDtype::f16) return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + d * 32)));
  if constexpr (D == KvDtype::int8)
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + d * 16))));
  return _mm512_setzero_ps();  // (int4 rows hold two dimensions: read in block_scores)
}

// Scores of GN heads (h0..h0+GN) against one block, folded into the running max/sum (online softmax):
// p[g][0..16) = exp(score - new max) (times V's scale of each slot for int8/int4 V: P·V then runs on the
// codes; pm[g] = Σ_j p_j vmin_j for int4 V), r[g] = exp(old max - new max) rescales what was accumulated.
// Quantized K by the algebra, never dequantized: int8 score_j = s_j Σ_d q_d c_dj; int4 score_j = s_j Σ_d
// q_d c_dj + m_j Σ_d q_d (qsum), its row r giving dimensions r (low nibbles) and r + hd/2 (high).
// The head count is a template argument so the accumulators live in registers (a runtime count
// spilled them: every FMA went through a store/load round trip, ~7x slower).
template <KvDtype KD, KvDtype VD, int GN>
inline void block_scores(const AttnItem& it, const KvBlock16& blk, int64_t h0, float* m, float* l, const float* qsum,
                         float (*p)[16], float* r, float* pm) {
  const int64_t hd = it.hd;
  const float* q = it.q + h0 * hd;
  const __mmask16 valid = __mmask16(((1u << blk.len) - 1) & ~((1u << blk.begin) - 1));
  __m512 s0[GN], s1[GN];  // two FMA chains per head: even / odd d (int4: low / high nibbles)
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g) s0[g] = s1[g] = _mm512_setzero_ps();
  if (blk.next_ks) {  // the next block's K scale data: 32 or 64 bytes, maybe over two lines
    _mm_prefetch(reinterpret_cast<const char*>(blk.next_ks), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(blk.next_ks) + 16 * kv_dtype_info(KD).scale_bytes - 1, _MM_HINT_T0);
  }
  if constexpr (KD == KvDtype::int4) {
    const int64_t half = hd / 2;
    for (int64_t d = 0; d < half; ++d) {
      if (blk.next_k && (d & 3) == 0)  // rows of 16 bytes: a line per 4
        _mm_prefetch(reinterpret_cast<const char*>(blk.next_k + d * 16), _MM_HINT_T0);
      const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.k + d * 16)));
      const __m512 k0 = _mm512_cvtepi32_ps(_mm512_and_si512(x, _mm512_set1_epi32(15)));
      const __m512 k1 = _mm512_cvtepi32_ps(_mm512_srli_epi32(x, 4));
#pragma GCC unroll 4
      for (int g = 0; g < GN; ++g) {
        s0[g] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + d]), k0, s0[g]);
        s1[g] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + d + half]), k1, s1[g]);
      }
    }
  } else {
    constexpr int64_t row_bytes = 16 * kv_dtype_info(KD).value_bits / 8;
    for (int64_t d = 0; d < hd; d += 2) {
      const __m512 k0 = k_row<KD>(blk.k, d), k1 = k_row<KD>(blk.k, d + 1);
      if (blk.next_k) {  // the next block's K rows d, d+1: two lines in f32, one in f16, half of one in int8
        if constexpr (row_bytes == 64) _mm_prefetch(reinterpret_cast<const char*>(blk.next_k + d * 64 + 64), _MM_HINT_T0);
        if (row_bytes >= 32 || (d & 3) == 0) _mm_prefetch(reinterpret_cast<const char*>(blk.next_k + d * row_bytes), _MM_HINT_T0);
      }
#pragma GCC unroll 4
      for (int g = 0; g < GN; ++g) {
        s0[g] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + d]), k0, s0[g]);
        s1[g] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + d + 1]), k1, s1[g]);
      }
    }
  }
  // (No libm call here: a call clobbers every zmm register, spilling the other heads' state.)
  __m512 sc[GN];
  alignas(64) float mx[16], dm[16];
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g) {
    __m512 s = _mm512_add_ps(s0[g], s1[g]);
    if constexpr (KD == KvDtype::int8) s = _mm512_mul_ps(s, _mm512_load_ps(blk.ks));
    if constexpr (KD == KvDtype::int4)
      s = _mm512_fmadd_ps(s, _mm512_load_ps(blk.ks), _mm512_mul_ps(_mm512_set1_ps(qsum[h0 + g]), _mm512_load_ps(blk.km)));
    sc[g] = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), valid, _mm512_mul_ps(s, _mm512_set1_ps(it.scale)));
    mx[g] = std::max(m[h0 + g], _mm512_reduce_max_ps(sc[g]));
    dm[g] = m[h0 + g] - mx[g];  // -inf before the first block: r = 0
    m[h0 + g] = mx[g];
  }
  _mm512_mask_storeu_ps(r, __mmask16((1u << GN) - 1), exp16(_mm512_maskz_loadu_ps(__mmask16((1u << GN) - 1), dm)));
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g) {
    const __m512 e = _mm512_maskz_mov_ps(valid, exp16(_mm512_sub_ps(sc[g], _mm512_set1_ps(mx[g]))));
    l[h0 + g] = l[h0 + g] * r[g] + _mm512_reduce_add_ps(e);
    if constexpr (VD == KvDtype::int4) pm[g] = _mm512_reduce_add_ps(_mm512_mul_ps(e, _mm512_load_ps(blk.vm)));
    if constexpr (kv_dtype_quantized(VD)) _mm512_store_ps(p[g], _mm512_mul_ps(e, _mm512_load_ps(blk.vs)));
    else _mm512_store_ps(p[g], e);
  }
}

struct Heads {
  // blk.next_*: the next block, prefetched while this one computes (null: none, or not the first head group).
  template <KvDtype KD, KvDtype VD, int GN>
  static void run(const AttnItem& it, const KvBlock16& blk, int64_t h0, float* m, float* l, const float* qsum) {
    alignas(64) float p[GN][16];
    float r[GN], pm[GN] = {};
    block_scores<KD, VD, GN>(it, blk, h0, m, l, qsum, p, r, pm);
    const int64_t nv = it.hd / 16;
    const bool pf = blk.next_v != nullptr;
    int64_t c = 0;
    for (; c + 4 <= nv; c += 4) block_pv<Simd, VD, GN, 4>(it, blk, h0, 16 * c, p, r, pm, pf && c == 0);
    switch (nv - c) {
      case 3: block_pv<Simd, VD, GN, 3>(it, blk, h0, 16 * c, p, r, pm, pf && c == 0); break;
      case 2: block_pv<Simd, VD, GN, 2>(it, blk, h0, 16 * c, p, r, pm, pf && c == 0); break;
      case 1: block_pv<Simd, VD, GN, 1>(it, blk, h0, 16 * c, p, r, pm, pf && c == 0); break;
      default: break;
    }
  }
  static void cvt16(const uint16_t* h, float* out) {
    _mm512_store_ps(out, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h))));
  }
};

}  // namespace

AttentionFn avx512_paged_attention() { return attention_items16<Heads, 16>; }

}  // namespace tinfer

// AVX2 (+FMA, F16C) paged attention: the AVX-512 kernel's structure at 8 floats. Block size 16 (a tile's
// scores are two ymm per head), head_dim a multiple of 8 (16 for an int4 V), K and V each f32, f16, int8
// or int4 (read in place, widened on load); other shapes go to the portable kernel. K is
// stored transposed ([head_dim][16]), so each d is two 8-wide FMAs per head with no horizontal sums;
// heads of a GQA group go 4 at a time sharing each K and V load, their accumulators in registers
// (template head counts); online softmax with one rescale per tile; fp16 widened on load (vcvtph2ps).
// P·V is the AVX-512 kernel's at 8 floats (common/attention_pv.h).
#include <immintrin.h>

#define TINFER_VEC_FLOATS 8
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

// exp on 8 lanes: vec.h's vexp (one exp for every kernel), as a ymm.
inline __m256 exp8(__m256 x) { return (__m256)vexp((vf)x); }

// The cache's codes as floats, widened on load (never a separate pass): f16 through vcvtph2ps, int8
// sign-extended, int4 zero-extended and split into its two nibbles. K row d of a block (16 slots), as two
// halves (slots 0-7, 8-15).
template <KvDtype D>
inline void k_row(const uint8_t* k, int64_t d, __m256& lo, __m256& hi) {
  if constexpr (D == KvDtype::f32) {
    lo = _mm256_loadu_ps(reinterpret_cast<const float*>(k + d * 64));
    hi = _mm256_loadu_ps(reinterpret_cast<const float*>(k + d * 64 + 32));
  } else if constexpr (D == KvDtype::f16) {
    lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + d * 32)));
    hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + d * 32 + 16)));
  } else {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(k + d * 16));
    lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(x));
    hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(x, x)));
  }
}

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
// p[g][0..16) = exp(score - new max) (times V's scale of each slot for int8/int4 V: P·V then runs on the
// codes; pm[g] = Σ_j p_j vmin_j for int4 V), r[g] = exp(old max - new max) rescales what was accumulated.
// Quantized K by the algebra, never dequantized: int8 score_j = s_j Σ_d q_d c_dj; int4 score_j = s_j Σ_d
// q_d c_dj + m_j Σ_d q_d (qsum), its row r giving dimensions r (low nibbles) and r + hd/2 (high).
// Slots 0-7 and 8-15 are two FMA chains per head; with 1-2 heads, even and odd d (int4: low and high
// nibbles) are two more (four heads already give eight chains, and 16 ymm registers hold no more).
template <KvDtype KD, KvDtype VD, int GN>
inline void block_scores(const AttnItem& it, const KvBlock16& blk, __m256 valid_lo, __m256 valid_hi, int64_t h0,
                         float* m, float* l, const float* qsum, float (*p)[16], float* r, float* pm) {
  constexpr int NC = GN <= 2 ? 2 : 1;
  const int64_t hd = it.hd;
  const float* q = it.q + h0 * hd;
  __m256 lo[NC][GN], hi[NC][GN];
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c)
#pragma GCC unroll 4
    for (int g = 0; g < GN; ++g) lo[c][g] = hi[c][g] = _mm256_setzero_ps();
  if (blk.next_ks) {  // the next block's K scale data: 32 or 64 bytes, maybe over two lines
    _mm_prefetch(reinterpret_cast<const char*>(blk.next_ks), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(blk.next_ks) + 16 * kv_dtype_info(KD).scale_bytes - 1, _MM_HINT_T0);
  }
  if constexpr (KD == KvDtype::int4) {
    const int64_t half = hd / 2;
    const __m256i nib = _mm256_set1_epi32(15);
    for (int64_t d = 0; d < half; ++d) {
      if (blk.next_k && (d & 3) == 0)  // rows of 16 bytes: a line per 4
        _mm_prefetch(reinterpret_cast<const char*>(blk.next_k + d * 16), _MM_HINT_T0);
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.k + d * 16));
      const __m256i x0 = _mm256_cvtepu8_epi32(x), x1 = _mm256_cvtepu8_epi32(_mm_unpackhi_epi64(x, x));
      // dimension d (low nibbles) then d + hd/2 (high), slots 0-7 and 8-15 of each
      const __m256 k[2][2] = {{_mm256_cvtepi32_ps(_mm256_and_si256(x0, nib)), _mm256_cvtepi32_ps(_mm256_and_si256(x1, nib))},
                              {_mm256_cvtepi32_ps(_mm256_srli_epi32(x0, 4)), _mm256_cvtepi32_ps(_mm256_srli_epi32(x1, 4))}};
#pragma GCC unroll 2
      for (int u = 0; u < 2; ++u) {
        const int c = NC == 2 ? u : 0;
#pragma GCC unroll 4
        for (int g = 0; g < GN; ++g) {
          const __m256 qd = _mm256_broadcast_ss(q + g * hd + d + u * half);
          lo[c][g] = _mm256_fmadd_ps(qd, k[u][0], lo[c][g]);
          hi[c][g] = _mm256_fmadd_ps(qd, k[u][1], hi[c][g]);
        }
      }
    }
  } else {
    constexpr int64_t row_bytes = 16 * kv_dtype_info(KD).value_bits / 8;
    for (int64_t d = 0; d < hd; d += 2) {
      if (blk.next_k) {  // the next block's K rows d, d+1: two lines in f32, one in f16, half of one in int8
        if constexpr (row_bytes == 64) _mm_prefetch(reinterpret_cast<const char*>(blk.next_k + d * 64 + 64), _MM_HINT_T0);
        if (row_bytes >= 32 || (d & 3) == 0) _mm_prefetch(reinterpret_cast<const char*>(blk.next_k + d * row_bytes), _MM_HINT_T0);
      }
#pragma GCC unroll 2
      for (int u = 0; u < 2; ++u) {
        __m256 k0, k1;
        k_row<KD>(blk.k, d + u, k0, k1);
        const int c = NC == 2 ? u : 0;
#pragma GCC unroll 4
        for (int g = 0; g < GN; ++g) {
          const __m256 qd = _mm256_broadcast_ss(q + g * hd + d + u);
          lo[c][g] = _mm256_fmadd_ps(qd, k0, lo[c][g]);
          hi[c][g] = _mm256_fmadd_ps(qd, k1, hi[c][g]);
        }
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
    if constexpr (KD == KvDtype::int8)
      a = _mm256_mul_ps(a, _mm256_load_ps(blk.ks)), b = _mm256_mul_ps(b, _mm256_load_ps(blk.ks + 8));
    if constexpr (KD == KvDtype::int4) {
      const __m256 qs = _mm256_set1_ps(qsum[h0 + g]);
      a = _mm256_fmadd_ps(a, _mm256_load_ps(blk.ks), _mm256_mul_ps(qs, _mm256_load_ps(blk.km)));
      b = _mm256_fmadd_ps(b, _mm256_load_ps(blk.ks + 8), _mm256_mul_ps(qs, _mm256_load_ps(blk.km + 8)));
    }
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
    if constexpr (VD == KvDtype::int4)
      pm[g] = hsum8(_mm256_fmadd_ps(el, _mm256_load_ps(blk.vm), _mm256_mul_ps(eh, _mm256_load_ps(blk.vm + 8))));
    if constexpr (kv_dtype_quantized(VD)) {
      _mm256_store_ps(p[g], _mm256_mul_ps(el, _mm256_load_ps(blk.vs)));
      _mm256_store_ps(p[g] + 8, _mm256_mul_ps(eh, _mm256_load_ps(blk.vs + 8)));
    } else {
      _mm256_store_ps(p[g], el);
      _mm256_store_ps(p[g] + 8, eh);
    }
  }
}

struct Heads {
  // blk.next_*: the next block, prefetched while this one computes (null: none, or not the first head group).
  template <KvDtype KD, KvDtype VD, int GN>
  static void run(const AttnItem& it, const KvBlock16& blk, int64_t h0, float* m, float* l, const float* qsum) {
    alignas(32) float p[GN][16];
    float r[GN], pm[GN] = {};
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), n = _mm256_set1_epi32(int(blk.len));
    const __m256i iota_hi = _mm256_add_epi32(iota, _mm256_set1_epi32(8)), first = _mm256_set1_epi32(int(blk.begin) - 1);
    // Visible slots: begin <= j < len.
    const __m256 valid_lo = _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpgt_epi32(n, iota), _mm256_cmpgt_epi32(iota, first)));
    const __m256 valid_hi =
        _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpgt_epi32(n, iota_hi), _mm256_cmpgt_epi32(iota_hi, first)));
    block_scores<KD, VD, GN>(it, blk, valid_lo, valid_hi, h0, m, l, qsum, p, r, pm);
    const int64_t nv = it.hd / 8;  // 8-float chunks, two per pass (GN*2 + 2 + 1 of the 16 ymm registers)
    const bool pf = blk.next_v != nullptr;
    int64_t c = 0;
    for (; c + 2 <= nv; c += 2) block_pv<Simd, VD, GN, 2>(it, blk, h0, 8 * c, p, r, pm, pf && c == 0);
    if (c < nv) block_pv<Simd, VD, GN, 1>(it, blk, h0, 8 * c, p, r, pm, pf && c == 0);
  }
  static void cvt16(const uint16_t* h, float* out) {
    _mm256_store_ps(out, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h))));
    _mm256_store_ps(out + 8, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h + 8))));
  }
};

}  // namespace

AttentionFn avx2_paged_attention() { return attention_items16<Heads, 8>; }

}  // namespace tinfer

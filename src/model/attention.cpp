// Paged flash-style attention on CPU. Work items are (token, kv head): the query heads of a GQA
// group share every K/V load. Tiles are KV blocks: scores of a whole tile first (K is stored
// transposed, [head_dim][block_size], so a tile's scores are block_size-wide FMAs with no
// horizontal sums), one rescale of the running output per tile, then P·V.
// GCC 12's AVX-512 headers build "undefined" vectors that -W(maybe-)uninitialized flags falsely.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "model/attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "core/isa.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace tinfer {

namespace {

constexpr int64_t kMaxGroup = 64;
constexpr int64_t kMaxTile = 256;

struct Item {
  const float* q;  // [group][hd], this group's query heads
  float* o;        // [group][hd]
  int64_t group, hd, bs, len_last, n_blocks;
  const int32_t* table;
  const KvStorage* kv;
  int64_t layer, kvh;
  float scale;
};

// Portable path: any block size / head dim.
void attend_generic(const Item& it) {
  float m[kMaxGroup], l[kMaxGroup], score[kMaxTile];
  std::fill(it.o, it.o + it.group * it.hd, 0.f);
  std::fill(m, m + it.group, -INFINITY);
  std::fill(l, l + it.group, 0.f);
  for (int64_t b = 0; b < it.n_blocks; ++b) {
    const int64_t len = b + 1 == it.n_blocks ? it.len_last : it.bs;
    const float* kt = it.kv->k_block(it.layer, it.table[b]) + it.kvh * it.hd * it.bs;  // [hd][bs]
    for (int64_t g = 0; g < it.group; ++g) {
      const float* qh = it.q + g * it.hd;
      float tile_max = -INFINITY;
      for (int64_t j = 0; j < len; ++j) {
        float s = 0;
        for (int64_t d = 0; d < it.hd; ++d) s += qh[d] * kt[d * it.bs + j];
        score[j] = s * it.scale;
        tile_max = std::max(tile_max, score[j]);
      }
      float* oh = it.o + g * it.hd;
      if (tile_max > m[g]) {  // rescale what was accumulated under the old max
        const float r = std::exp(m[g] - tile_max);
        scale_inplace(oh, r, it.hd);
        l[g] *= r;
        m[g] = tile_max;
      }
      for (int64_t j = 0; j < len; ++j) {
        const float w = std::exp(score[j] - m[g]);
        l[g] += w;
        axpy(w, it.kv->v(it.layer, it.table[b], j) + it.kvh * it.hd, oh, it.hd);
      }
    }
  }
  for (int64_t g = 0; g < it.group; ++g) scale_inplace(it.o + g * it.hd, 1.f / l[g], it.hd);
}

#define TINFER_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,fma")))

// exp on 16 lanes (Cephes-style polynomial after range reduction by ln 2); 0 below -87.
TINFER_AVX512 inline __m512 exp16(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.33654f);
  const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  x = _mm512_max_ps(x, lo);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_maskz_mov_ps(~under, _mm512_scalef_ps(p, n));
}

// AVX-512 path: block_size 16 (one zmm of scores per head), head_dim a multiple of 16 (<= 256).
TINFER_AVX512 void attend_avx512(const Item& it) {
  const int64_t G = it.group, hd = it.hd, nv = hd / 16;
  float m[kMaxGroup], l[kMaxGroup];
  alignas(64) float p[kMaxGroup][16];
  __m512 acc[16];  // one head's output while its P·V runs (hd <= 256)
  std::fill(it.o, it.o + G * hd, 0.f);
  std::fill(m, m + G, -INFINITY);
  std::fill(l, l + G, 0.f);
  for (int64_t b = 0; b < it.n_blocks; ++b) {
    const int64_t len = b + 1 == it.n_blocks ? it.len_last : 16;
    const __mmask16 valid = __mmask16((1u << len) - 1);
    const float* kt = it.kv->k_block(it.layer, it.table[b]) + it.kvh * hd * 16;  // [hd][16]
    for (int64_t g0 = 0; g0 < G; g0 += 4) {  // 4 heads at a time: 4 independent FMA chains
      const int64_t gn = std::min<int64_t>(4, G - g0);
      __m512 s[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
      for (int64_t d = 0; d < hd; ++d) {
        const __m512 kd = _mm512_loadu_ps(kt + d * 16);
        for (int64_t g = 0; g < gn; ++g) s[g] = _mm512_fmadd_ps(_mm512_set1_ps(it.q[(g0 + g) * hd + d]), kd, s[g]);
      }
      for (int64_t g = 0; g < gn; ++g) {
        const int64_t h = g0 + g;
        const __m512 sc = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), valid, _mm512_mul_ps(s[g], _mm512_set1_ps(it.scale)));
        const float tile_max = _mm512_reduce_max_ps(sc);
        float r = 1.f;
        if (tile_max > m[h]) {
          r = std::exp(m[h] - tile_max);
          m[h] = tile_max;
        }
        const __m512 e = _mm512_maskz_mov_ps(valid, exp16(_mm512_sub_ps(sc, _mm512_set1_ps(m[h]))));
        l[h] = l[h] * r + _mm512_reduce_add_ps(e);
        _mm512_store_ps(p[h], e);
        if (r != 1.f) {
          float* oh = it.o + h * hd;
          for (int64_t v = 0; v < nv; ++v) _mm512_storeu_ps(oh + 16 * v, _mm512_mul_ps(_mm512_loadu_ps(oh + 16 * v), _mm512_set1_ps(r)));
        }
      }
    }
    for (int64_t h = 0; h < G; ++h) {  // O[h] += P[h] · V (V rows stay in L1 across heads)
      float* oh = it.o + h * hd;
      for (int64_t v = 0; v < nv; ++v) acc[v] = _mm512_loadu_ps(oh + 16 * v);
      for (int64_t j = 0; j < len; ++j) {
        const float* vj = it.kv->v(it.layer, it.table[b], j) + it.kvh * hd;
        const __m512 w = _mm512_set1_ps(p[h][j]);
        for (int64_t v = 0; v < nv; ++v) acc[v] = _mm512_fmadd_ps(w, _mm512_loadu_ps(vj + 16 * v), acc[v]);
      }
      for (int64_t v = 0; v < nv; ++v) _mm512_storeu_ps(oh + 16 * v, acc[v]);
    }
  }
  for (int64_t h = 0; h < G; ++h) {
    const __m512 inv = _mm512_set1_ps(1.f / l[h]);
    for (int64_t v = 0; v < nv; ++v) _mm512_storeu_ps(it.o + h * hd + 16 * v, _mm512_mul_ps(_mm512_loadu_ps(it.o + h * hd + 16 * v), inv));
  }
}

}  // namespace

void paged_attention(const AttentionShape& s, const ForwardBatch& batch, const KvStorage& kv, int64_t layer,
                     const float* q, int64_t q_stride, float* out, ThreadPool& pool) {
  const int64_t n = int64_t(batch.tokens.size()), hd = s.head_dim, group = s.n_heads / s.n_kv_heads;
  const int64_t bs = kv.block_size();
  const bool fast = active_isa() == Isa::avx512 && bs == 16 && hd % 16 == 0 && hd <= 256;
  const float scale = 1.0f / std::sqrt(float(hd));
  pool.parallel_for(n * s.n_kv_heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t i = item / s.n_kv_heads, kvh = item % s.n_kv_heads, pos = batch.positions[i];
      Item it;
      it.q = q + i * q_stride + kvh * group * hd;
      it.o = out + i * s.n_heads * hd + kvh * group * hd;  // [n][n_heads*hd]: this group's heads
      it.group = group, it.hd = hd, it.bs = bs;
      it.n_blocks = pos / bs + 1;
      it.len_last = pos % bs + 1;
      it.table = batch.block_tables[batch.seq[i]].data();
      it.kv = &kv, it.layer = layer, it.kvh = kvh, it.scale = scale;
      if (fast) attend_avx512(it);
      else attend_generic(it);
    }
  });
}

}  // namespace tinfer

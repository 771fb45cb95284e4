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
#include <type_traits>

#include "core/error.h"
#include "core/fp16.h"
#include "core/isa.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace tinfer {

namespace {

constexpr int64_t kMaxGroup = 64;
constexpr int64_t kMaxTile = 256;  // (portable path: block size)

struct Item {
  const float* q;  // [group][hd], this group's query heads
  float* o;        // [group][hd]
  int64_t group, hd, bs, len_last, n_blocks;
  const int32_t* table;
  const KvStorage* kv;
  int64_t layer, kvh;
  float scale;
};

inline float to_f32(float x) { return x; }
inline float to_f32(uint16_t h) { return fp16_to_f32(h); }

// Portable path: any block size / head dim; T = float (f32 cache) or uint16_t (f16).
template <class T>
void attend_generic(const Item& it) {
  float m[kMaxGroup], l[kMaxGroup], score[kMaxTile];
  std::fill(it.o, it.o + it.group * it.hd, 0.f);
  std::fill(m, m + it.group, -INFINITY);
  std::fill(l, l + it.group, 0.f);
  for (int64_t b = 0; b < it.n_blocks; ++b) {
    const int64_t len = b + 1 == it.n_blocks ? it.len_last : it.bs;
    const T* kt = it.kv->k_block<T>(it.layer, it.table[b]) + it.kvh * it.hd * it.bs;  // [hd][bs]
    for (int64_t g = 0; g < it.group; ++g) {
      const float* qh = it.q + g * it.hd;
      float tile_max = -INFINITY;
      for (int64_t j = 0; j < len; ++j) {
        float s = 0;
        for (int64_t d = 0; d < it.hd; ++d) s += qh[d] * to_f32(kt[d * it.bs + j]);
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
        const T* vj = it.kv->v<T>(it.layer, it.table[b], j) + it.kvh * it.hd;
        if constexpr (std::is_same_v<T, float>) {
          axpy(w, vj, oh, it.hd);
        } else {
          for (int64_t d = 0; d < it.hd; ++d) oh[d] += w * to_f32(vj[d]);
        }
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

// 16 cache elements as floats: fp16 is widened on load (vcvtph2ps), so an f16 cache reads half the bytes.
TINFER_AVX512 inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
TINFER_AVX512 inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Scores of GN heads (h0..h0+GN) against one block, folded into the running max/sum (online softmax):
// p[g][0..16) = exp(score - new max), r[g] = exp(old max - new max) rescales what was accumulated.
// The head count is a template argument so the accumulators live in registers (a runtime count
// spilled them: every FMA went through a store/load round trip, ~7x slower).
template <class T, int GN>
TINFER_AVX512 inline void block_scores(const Item& it, const T* kt, __mmask16 valid, int64_t h0, float* m,
                                       float* l, float (*p)[16], float* r, const T* next_k) {
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
TINFER_AVX512 inline void block_pv(const Item& it, const T* v0, int64_t vstride, int64_t len, int64_t h0,
                                   int64_t c0, const float (*p)[16], const float* r, const T* next_v0) {
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
TINFER_AVX512 inline void block_heads(const Item& it, const T* kt, const T* v0, int64_t vstride, int64_t len,
                                      int64_t h0, float* m, float* l, const T* next_k, const T* next_v0) {
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

// AVX-512 path: block_size 16 (one zmm of scores per head), head_dim a multiple of 16. Heads of the
// GQA group go 4 at a time (their scores share each K load, their P·V each V load).
template <class T>
TINFER_AVX512 void attend_avx512(const Item& it) {
  const int64_t G = it.group, hd = it.hd;
  float m[kMaxGroup], l[kMaxGroup];
  std::fill(it.o, it.o + G * hd, 0.f);
  std::fill(m, m + G, -INFINITY);
  std::fill(l, l + G, 0.f);
  const int64_t vstride = it.kv->v<T>(it.layer, 0, 1) - it.kv->v<T>(it.layer, 0, 0);  // elements
  for (int64_t b = 0; b < it.n_blocks; ++b) {
    const int64_t len = b + 1 == it.n_blocks ? it.len_last : 16;
    const T* kt = it.kv->k_block<T>(it.layer, it.table[b]) + it.kvh * hd * 16;  // [hd][16]
    const T* v0 = it.kv->v<T>(it.layer, it.table[b], 0) + it.kvh * hd;          // slot j at v0 + j * vstride
    // Decode reads each KV block once, from L3 or DRAM (a step's weights stream through the caches), at
    // addresses the hardware prefetchers cannot predict (block tables). The first head group fetches the
    // next block a line or two per iteration: issued all at once, 128 prefetches overflowed the miss
    // queues and most were dropped (no gain measured).
    const bool more = b + 1 < it.n_blocks;
    const T* nk = more ? it.kv->k_block<T>(it.layer, it.table[b + 1]) + it.kvh * hd * 16 : nullptr;
    const T* nv0 = more ? it.kv->v<T>(it.layer, it.table[b + 1], 0) + it.kvh * hd : nullptr;
    int64_t h = 0;
    for (; h + 4 <= G; h += 4, nk = nv0 = nullptr) block_heads<T, 4>(it, kt, v0, vstride, len, h, m, l, nk, nv0);
    switch (G - h) {
      case 3: block_heads<T, 3>(it, kt, v0, vstride, len, h, m, l, nk, nv0); break;
      case 2: block_heads<T, 2>(it, kt, v0, vstride, len, h, m, l, nk, nv0); break;
      case 1: block_heads<T, 1>(it, kt, v0, vstride, len, h, m, l, nk, nv0); break;
      default: break;
    }
  }
  for (int64_t h = 0; h < G; ++h) {
    const __m512 inv = _mm512_set1_ps(1.f / l[h]);
    for (int64_t v = 0; v < hd / 16; ++v)
      _mm512_storeu_ps(it.o + h * hd + 16 * v, _mm512_mul_ps(_mm512_loadu_ps(it.o + h * hd + 16 * v), inv));
  }
}

}  // namespace

void paged_attention(const AttentionShape& s, const ForwardBatch& batch, const KvStorage& kv, int64_t layer,
                     const float* q, int64_t q_stride, float* out, ThreadPool& pool) {
  const int64_t n = int64_t(batch.tokens.size()), hd = s.head_dim, group = s.n_heads / s.n_kv_heads;
  const int64_t bs = kv.block_size();
  const bool fast = active_isa() == Isa::avx512 && bs == 16 && hd % 16 == 0;
  const float scale = 1.0f / std::sqrt(float(hd));
  const bool f16 = kv.dtype() == KvDtype::f16;
  check(group <= kMaxGroup && (fast || bs <= kMaxTile),
        "attention: query heads per kv head (" + std::to_string(group) + ") or block size (" + std::to_string(bs) +
            ") beyond this kernel's limits (" + std::to_string(kMaxGroup) + ", " + std::to_string(kMaxTile) + ")");
  // Items cost their query's position: a causal prefill chunk's last tokens cost the most, so a static
  // split idled the thread with the early tokens (a quarter of the work for half the items). Each
  // thread takes a run and then steals single items from the back of the other runs.
  pool.parallel_for_runs(n * s.n_kv_heads, 1, [&](int64_t begin, int64_t end) {
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
      if (f16) fast ? attend_avx512<uint16_t>(it) : attend_generic<uint16_t>(it);
      else fast ? attend_avx512<float>(it) : attend_generic<float>(it);
    }
  });
}

}  // namespace tinfer

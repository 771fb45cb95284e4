// Paged flash-style attention on CPU. Work items are (token, kv head): the query heads of a GQA
// group share every K/V load. Tiles are KV blocks: scores of a tile first, then one rescale.
#include "model/attention.h"

#include <algorithm>
#include <cmath>

#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace tinfer {

namespace {
constexpr int64_t kMaxGroup = 64;
constexpr int64_t kMaxTile = 256;
}  // namespace

void paged_attention(const AttentionShape& s, const ForwardBatch& batch, const KvStorage& kv, int64_t layer,
                     const float* q, int64_t q_stride, float* out, ThreadPool& pool) {
  const int64_t n = int64_t(batch.tokens.size()), hd = s.head_dim, group = s.n_heads / s.n_kv_heads;
  const int64_t bs = kv.block_size();
  const float scale = 1.0f / std::sqrt(float(hd));
  pool.parallel_for(n * s.n_kv_heads, 1, [&](int64_t begin, int64_t end) {
    float m[kMaxGroup], l[kMaxGroup], score[kMaxTile];
    for (int64_t item = begin; item < end; ++item) {
      const int64_t i = item / s.n_kv_heads, kvh = item % s.n_kv_heads;
      const int64_t pos = batch.positions[i];
      const auto& table = batch.block_tables[batch.seq[i]];
      float* o = out + i * s.n_heads * hd + kvh * group * hd;  // [n][n_heads*hd]: this group's heads
      std::fill(o, o + group * hd, 0.f);
      std::fill(m, m + group, -INFINITY);
      std::fill(l, l + group, 0.f);
      for (int64_t start = 0; start <= pos; start += bs) {
        const int64_t block = table[start / bs], len = std::min(bs, pos + 1 - start);
        for (int64_t g = 0; g < group; ++g) {
          const float* qh = q + i * q_stride + (kvh * group + g) * hd;
          float tile_max = -INFINITY;
          for (int64_t j = 0; j < len; ++j) {
            score[j] = dot_f32(qh, kv.k(layer, block, j) + kvh * hd, hd) * scale;
            tile_max = std::max(tile_max, score[j]);
          }
          float* oh = o + g * hd;
          if (tile_max > m[g]) {  // rescale what was accumulated under the old max
            float r = std::exp(m[g] - tile_max);
            scale_inplace(oh, r, hd);
            l[g] *= r;
            m[g] = tile_max;
          }
          for (int64_t j = 0; j < len; ++j) {
            float w = std::exp(score[j] - m[g]);
            l[g] += w;
            axpy(w, kv.v(layer, block, j) + kvh * hd, oh, hd);
          }
        }
      }
      for (int64_t g = 0; g < group; ++g) scale_inplace(o + g * hd, 1.f / l[g], hd);
    }
  });
}

}  // namespace tinfer

// Portable paged attention: any block size (<= kAttnMaxBlockSize), any head_dim, f32 and f16 caches.
// Per block and query head: the tile's scores (K is [hd][bs], so d-outer loops run along the slots),
// one rescale of the running output when the max grows, then P·V one V row at a time (scalar exp).
#define TINFER_VEC_FLOATS 4
#include "kernels/cpu/common/vec.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/fp16.h"
#include "kernels/attention.h"
#include "kernels/cpu/common/attention_item.h"

namespace tinfer {

namespace {

// T = float (f32 cache) or uint16_t (f16): an f16 block is widened once into per-thread scratch (K as
// [hd][len], V as [len][hd]) and then shared by the group's heads, instead of converting each element
// once per head.
template <class T>
void attend_generic(const AttnItem& it) {
  float m[kAttnMaxGroup], l[kAttnMaxGroup], score[kAttnMaxBlockSize];
  std::fill(it.o, it.o + it.group * it.hd, 0.f);
  std::fill(m, m + it.group, -INFINITY);
  std::fill(l, l + it.group, 0.f);
  const int64_t bs = it.bs, hd = it.hd;
  thread_local std::vector<float> kbuf, vbuf;
  if constexpr (!std::is_same_v<T, float>) {
    if (kbuf.size() < size_t(hd * bs)) kbuf.resize(size_t(hd * bs)), vbuf.resize(size_t(hd * bs));
  }
  for (int64_t b = 0; b < it.n_blocks; ++b) {
    const int64_t len = b + 1 == it.n_blocks ? it.len_last : bs;
    const float *kt, *v0;  // K [hd] rows of kstride, V [len] rows of vstride
    int64_t kstride, vstride;
    if constexpr (std::is_same_v<T, float>) {
      kt = it.k_tile<float>(b), v0 = it.v0<float>(b), kstride = bs, vstride = it.v_stride<float>();
    } else {
      const T* ks = it.k_tile<T>(b);
      const T* vs = it.v0<T>(b);
      const int64_t vss = it.v_stride<T>();
      for (int64_t d = 0; d < hd; ++d)
        for (int64_t j = 0; j < len; ++j) kbuf[d * len + j] = fp16_to_f32(ks[d * bs + j]);
      for (int64_t j = 0; j < len; ++j)
        for (int64_t d = 0; d < hd; ++d) vbuf[j * hd + d] = fp16_to_f32(vs[j * vss + d]);
      kt = kbuf.data(), v0 = vbuf.data(), kstride = len, vstride = hd;
    }
    for (int64_t g = 0; g < it.group; ++g) {
      const float* qh = it.q + g * hd;
      std::fill(score, score + len, 0.f);
      for (int64_t d = 0; d < hd; ++d) {
        const float qd = qh[d];
        const float* kd = kt + d * kstride;
        for (int64_t j = 0; j < len; ++j) score[j] += qd * kd[j];
      }
      float tile_max = -INFINITY;
      for (int64_t j = 0; j < len; ++j) tile_max = std::max(tile_max, score[j] *= it.scale);
      float* oh = it.o + g * hd;
      if (tile_max > m[g]) {  // rescale what was accumulated under the old max
        const float r = std::exp(m[g] - tile_max);
        v_scale_inplace(oh, r, hd);
        l[g] *= r;
        m[g] = tile_max;
      }
      for (int64_t j = 0; j < len; ++j) {
        const float w = std::exp(score[j] - m[g]);
        l[g] += w;
        v_axpy(w, v0 + j * vstride, oh, hd);
      }
    }
  }
  for (int64_t g = 0; g < it.group; ++g) v_scale_inplace(it.o + g * hd, 1.f / l[g], hd);
}

}  // namespace

void generic_paged_attention(const AttentionArgs& a, int64_t item0, int64_t item1) {
  const bool f16 = a.kv.dtype == KvDtype::f16;
  for (int64_t item = item0; item < item1; ++item) {
    const AttnItem it = attn_item(a, item);
    f16 ? attend_generic<uint16_t>(it) : attend_generic<float>(it);
  }
}

}  // namespace tinfer

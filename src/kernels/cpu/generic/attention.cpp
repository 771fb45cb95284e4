// Portable paged attention: any block size (<= kAttnMaxBlockSize), any head_dim, every KvDtype.
// Per block and query head: the tile's scores (K is [hd][bs], so d-outer loops run along the slots),
// one rescale of the running output when the max grows, then P·V one V row at a time (scalar exp).
#define TINFER_VEC_FLOATS 4
#include "kernels/cpu/common/vec.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cpu/common/attention_item.h"
#include "kernels/kv_quant.h"

namespace tinfer {

namespace {

// f32 caches are read in place; any other type (f16, int8, int4, or K and V of different types) is
// widened once per block into per-thread scratch (K as [hd][len], V as [len][hd]) through the reference
// reads of kernels/kv_quant.h, then shared by the group's heads.
void attend_generic(const AttnItem& it) {
  float m[kAttnMaxGroup], l[kAttnMaxGroup], score[kAttnMaxBlockSize];
  std::fill(it.o, it.o + it.group * it.hd, 0.f);
  std::fill(m, m + it.group, -INFINITY);
  std::fill(l, l + it.group, 0.f);
  const int64_t bs = it.bs, hd = it.hd;
  const bool in_place = it.kv->k_dtype == KvDtype::f32 && it.kv->v_dtype == KvDtype::f32;
  // The widened tiles: on the stack up to 4096 floats each (head_dim 256 at block size 16), else per-thread
  // scratch (grown on a thread's first such item: an allocation whose step depends on scheduling).
  constexpr int64_t kStackTile = 4096;
  float kstack[kStackTile], vstack[kStackTile];
  thread_local std::vector<float> kheap, vheap;
  const bool on_stack = hd * bs <= kStackTile;
  if (!in_place && !on_stack && kheap.size() < size_t(hd * bs)) kheap.resize(size_t(hd * bs)), vheap.resize(size_t(hd * bs));
  float* kbuf = on_stack ? kstack : kheap.data();
  float* vbuf = on_stack ? vstack : vheap.data();
  for (int64_t b = it.b_first; b < it.n_blocks; ++b) {
    const int64_t len = b + 1 == it.n_blocks ? it.len_last : bs;
    const int64_t begin = b == it.b_first ? it.begin_first : 0;  // slots [begin, len) visible
    const float *kt, *v0;  // K [hd] rows of kstride, V [len] rows of vstride
    int64_t kstride, vstride;
    if (in_place) {
      kt = it.k_tile<float>(b), v0 = it.v0<float>(b), kstride = bs, vstride = it.v_stride<float>();
    } else {
      kv_dequant_k_tile(*it.kv, hd, it.table[b], it.kvh, len, kbuf);
      kv_dequant_v_tile(*it.kv, hd, it.table[b], it.kvh, len, vbuf);
      kt = kbuf, v0 = vbuf, kstride = len, vstride = hd;
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
      for (int64_t j = begin; j < len; ++j) tile_max = std::max(tile_max, score[j] *= it.scale);
      float* oh = it.o + g * hd;
      if (tile_max > m[g]) {  // rescale what was accumulated under the old max
        const float r = std::exp(m[g] - tile_max);
        v_scale_inplace(oh, r, hd);
        l[g] *= r;
        m[g] = tile_max;
      }
      for (int64_t j = begin; j < len; ++j) {
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
  for (int64_t item = item0; item < item1; ++item) attend_generic(attn_item(a, item));
}

}  // namespace tinfer

// One work item of the paged attention kernels (kernels/attention.h): token i, kv head kvh, and the
// query heads of its GQA group. Shared by every ISA's attention.cpp; header-only, internal linkage.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/attention.h"

namespace tinfer {
namespace {

struct AttnItem {
  const float* q;  // [group][hd]: this group's query heads
  float* o;        // [group][hd]
  int64_t group, hd, bs, n_blocks, len_last, kvh;
  const int32_t* table;
  const KvLayerView* kv;
  float scale;

  // K of table block b for this kv head: [hd][bs] elements of type T.
  template <class T>
  const T* k_tile(int64_t b) const {
    return reinterpret_cast<const T*>(kv->k + table[b] * kv->k_block_bytes + kvh * kv->k_head_bytes);
  }
  // V slot 0 of table block b for this kv head; slot j is v_stride<T>() elements further.
  template <class T>
  const T* v0(int64_t b) const {
    return reinterpret_cast<const T*>(kv->v + table[b] * kv->v_block_bytes + kvh * kv->v_head_bytes);
  }
  template <class T>
  int64_t v_stride() const {
    return kv->v_slot_bytes / int64_t(sizeof(T));
  }
};

inline AttnItem attn_item(const AttentionArgs& a, int64_t item) {
  const int64_t i = item / a.n_kv_heads, kvh = item % a.n_kv_heads, group = a.n_heads / a.n_kv_heads;
  const int64_t hd = a.head_dim, bs = a.kv.block_size, pos = a.positions[i];
  AttnItem it;
  it.q = a.q + i * a.q_stride + kvh * group * hd;
  it.o = a.out + i * a.out_stride + kvh * group * hd;
  it.group = group, it.hd = hd, it.bs = bs;
  it.n_blocks = pos / bs + 1;
  it.len_last = pos % bs + 1;
  it.kvh = kvh;
  it.table = a.block_tables[i];
  it.kv = &a.kv;
  it.scale = a.scale;
  return it;
}

// The part every vector kernel shares (block size 16): walk the item's KV blocks; per block, the group's query
// heads go 4 at a time (then 3, 2 or 1) through Heads::run<T, GN>, which scores them against the block, folds
// the scores into the running max m and sum l (online softmax) and accumulates P·V into it.o; the first head
// group of a block also prefetches the next block (next_k / next_v0, else nullptr). Finally each head's
// output is divided by its sum. Heads is the ISA's register-blocked block kernel.
template <class T, class Heads>
void attend_blocks16(const AttnItem& it) {
  const int64_t G = it.group, hd = it.hd;
  float m[kAttnMaxGroup], l[kAttnMaxGroup];
  std::fill(it.o, it.o + G * hd, 0.f);
  std::fill(m, m + G, -INFINITY);
  std::fill(l, l + G, 0.f);
  const int64_t vstride = it.v_stride<T>();  // elements
  for (int64_t b = 0; b < it.n_blocks; ++b) {
    const int64_t len = b + 1 == it.n_blocks ? it.len_last : 16;
    const T* kt = it.k_tile<T>(b);  // [hd][16]
    const T* v0 = it.v0<T>(b);      // slot j at v0 + j * vstride
    // Decode reads each KV block once, from L3 or DRAM (a step's weights stream through the caches), at
    // addresses the hardware prefetchers cannot predict (block tables). The first head group fetches the
    // next block a line or two per iteration: issued all at once, 128 prefetches overflowed the miss
    // queues and most were dropped (no gain measured).
    const bool more = b + 1 < it.n_blocks;
    const T* nk = more ? it.k_tile<T>(b + 1) : nullptr;
    const T* nv0 = more ? it.v0<T>(b + 1) : nullptr;
    int64_t h = 0;
    for (; h + 4 <= G; h += 4, nk = nv0 = nullptr) Heads::template run<T, 4>(it, kt, v0, vstride, len, h, m, l, nk, nv0);
    switch (G - h) {
      case 3: Heads::template run<T, 3>(it, kt, v0, vstride, len, h, m, l, nk, nv0); break;
      case 2: Heads::template run<T, 2>(it, kt, v0, vstride, len, h, m, l, nk, nv0); break;
      case 1: Heads::template run<T, 1>(it, kt, v0, vstride, len, h, m, l, nk, nv0); break;
      default: break;
    }
  }
  for (int64_t h = 0; h < G; ++h) {
    const float inv = 1.f / l[h];
    float* o = it.o + h * hd;
    for (int64_t d = 0; d < hd; ++d) o[d] *= inv;  // (vectorized with the ISA's flags)
  }
}

// A kernel-table row from a block kernel: items [item0, item1) on the fast path when the shape allows
// (block size 16, head_dim a multiple of `hd_multiple`, K and V both f32 or both f16), else on the portable
// kernel.
template <class Heads, int64_t hd_multiple>
void attention_items16(const AttentionArgs& a, int64_t item0, int64_t item1) {
  const bool f16 = a.kv.k_dtype == KvDtype::f16;
  if (a.kv.block_size != 16 || a.head_dim % hd_multiple != 0 || a.kv.k_dtype != a.kv.v_dtype ||
      kv_dtype_quantized(a.kv.k_dtype))
    return generic_paged_attention(a, item0, item1);
  for (int64_t item = item0; item < item1; ++item) {
    const AttnItem it = attn_item(a, item);
    f16 ? attend_blocks16<uint16_t, Heads>(it) : attend_blocks16<float, Heads>(it);
  }
}

}  // namespace
}  // namespace tinfer

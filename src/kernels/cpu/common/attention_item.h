// One work item of the paged attention kernels (kernels/attention.h): token i, kv head kvh, and the
// query heads of its GQA group. Shared by every ISA's attention.cpp; header-only, internal linkage.
#pragma once
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
    return reinterpret_cast<const T*>(kv->k + table[b] * kv->k_block_bytes) + kvh * hd * bs;
  }
  // V slot 0 of table block b for this kv head; slot j is v_stride<T>() elements further.
  template <class T>
  const T* v0(int64_t b) const {
    return reinterpret_cast<const T*>(kv->v + table[b] * kv->v_block_bytes) + kvh * hd;
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

}  // namespace
}  // namespace tinfer

// One work item of the paged attention kernels (kernels/attention.h): token i, kv head kvh, and the
// query heads of its GQA group. Shared by every ISA's attention.cpp; header-only, internal linkage.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/attention.h"

namespace tinfer {
namespace {

struct AttnItem {
  const float* q;  // [group][hd]: this group's query heads
  float* o;        // [group][hd]
  int64_t group, hd, bs, n_blocks, len_last, kvh;
  int64_t b_first, begin_first;  // the first block read (sliding window) and its first visible slot
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
  // This kv head's K scale data of table block b: [bs] entries of k_scale_bytes (kv_quant.h).
  const uint8_t* k_scales(int64_t b) const {
    return kv->k + table[b] * kv->k_block_bytes + kv->k_scales_offset + kvh * bs * kv->k_scale_bytes;
  }
  // This kv head's V scale data of slot 0 of table block b; slot j is n_kv_heads * v_scale_bytes further.
  const uint8_t* v_scales(int64_t b) const {
    return kv->v + table[b] * kv->v_block_bytes + kv->v_scales_offset + kvh * kv->v_scale_bytes;
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
  const int64_t lo = a.window > 0 ? std::max<int64_t>(0, pos - a.window + 1) : 0;  // first visible position
  it.b_first = lo / bs, it.begin_first = lo % bs;
  it.kvh = kvh;
  it.table = a.block_tables[i];
  it.kv = &a.kv;
  it.scale = a.scale;
  return it;
}

// One KV block of a work item's kv head as the block kernels (block size 16) read it, in the cache's own
// types: K codes [k_rows][16] (row r: dimension r of the 16 slots; int4: dimensions r and r + hd/2), V slot
// j's hd codes at v + j * v_stride bytes. For int8/int4 the fp16 scale data is widened once per block here,
// shared by every head group: ks/km the K scales/mins of the 16 slots, vs/vm V's; 0 for slots >= len (so
// p_j * vs_j and p_j * vm_j vanish there whatever the slot's stale bytes hold). Unused for f32/f16.
struct KvBlock16 {
  const uint8_t* k;
  const uint8_t* v;
  int64_t v_stride, len;
  int64_t begin;  // slots [begin, len) are visible (begin > 0 only in a sliding window's first block)
  alignas(64) float ks[16], km[16], vs[16], vm[16];
  // The next block's K codes, V slot 0, K and V scale data, prefetched by the first head group (else null).
  const uint8_t *next_k, *next_v, *next_ks, *next_vs;
};

// Widens `len` fp16 values at p, p + stride, ... (bytes) into out[0..16), zero-filling slots len..15.
// cvt16(const uint16_t[16], float[16]) is the ISA's vector conversion.
template <class Cvt>
inline void widen_scales16(const uint8_t* p, int64_t stride, int64_t len, float* out, Cvt cvt16) {
  alignas(64) uint16_t h[16] = {};
  for (int64_t j = 0; j < len; ++j) std::memcpy(&h[j], p + j * stride, 2);
  cvt16(h, out);
}

// The part every vector kernel shares (block size 16): walk the item's KV blocks; per block, widen the
// scales of quantized K/V (KvBlock16), then the group's query heads go 4 at a time (then 3, 2 or 1) through
// Heads::run<KD, VD, GN>, which scores them against the block, folds the scores into the running max m and
// sum l (online softmax) and accumulates P·V into it.o; the first head group of a block also prefetches
// the next block. Finally each head's output is divided by its sum. Heads is the ISA's register-blocked
// block kernel (with Heads::cvt16, its fp16 widening). qsum[g] = Σ_d q_d of head g, the int4 K min's
// factor (score_j = s_j Σ_d q_d c_dj + m_j Σ_d q_d).
template <KvDtype KD, KvDtype VD, class Heads>
void attend_blocks16(const AttnItem& it) {
  const int64_t G = it.group, hd = it.hd;
  float m[kAttnMaxGroup], l[kAttnMaxGroup], qsum[kAttnMaxGroup];
  std::fill(it.o, it.o + G * hd, 0.f);
  std::fill(m, m + G, -INFINITY);
  std::fill(l, l + G, 0.f);
  if constexpr (KD == KvDtype::int4)
    for (int64_t g = 0; g < G; ++g) {
      float s = 0;
      for (int64_t d = 0; d < hd; ++d) s += it.q[g * hd + d];
      qsum[g] = s;
    }
  const int64_t v_sstride = (it.kv->v_slot_bytes / it.kv->v_head_bytes) * it.kv->v_scale_bytes;  // V scale of slot j+1
  KvBlock16 blk;
  blk.v_stride = it.kv->v_slot_bytes;
  for (int64_t b = it.b_first; b < it.n_blocks; ++b) {
    blk.len = b + 1 == it.n_blocks ? it.len_last : 16;
    blk.begin = b == it.b_first ? it.begin_first : 0;
    blk.k = it.k_tile<uint8_t>(b);
    blk.v = it.v0<uint8_t>(b);
    if constexpr (KD == KvDtype::int8) widen_scales16(it.k_scales(b), 2, blk.len, blk.ks, Heads::cvt16);
    if constexpr (KD == KvDtype::int4) {
      widen_scales16(it.k_scales(b), 4, blk.len, blk.ks, Heads::cvt16);
      widen_scales16(it.k_scales(b) + 2, 4, blk.len, blk.km, Heads::cvt16);
    }
    if constexpr (VD == KvDtype::int8) widen_scales16(it.v_scales(b), v_sstride, blk.len, blk.vs, Heads::cvt16);
    if constexpr (VD == KvDtype::int4) {
      widen_scales16(it.v_scales(b), v_sstride, blk.len, blk.vs, Heads::cvt16);
      widen_scales16(it.v_scales(b) + 2, v_sstride, blk.len, blk.vm, Heads::cvt16);
    }
    // Decode reads each KV block once, from L3 or DRAM (a step's weights stream through the caches), at
    // addresses the hardware prefetchers cannot predict (block tables). The first head group fetches the
    // next block a line or two per iteration: issued all at once, 128 prefetches overflowed the miss
    // queues and most were dropped (no gain measured).
    const bool more = b + 1 < it.n_blocks;
    blk.next_k = more ? it.k_tile<uint8_t>(b + 1) : nullptr;
    blk.next_v = more ? it.v0<uint8_t>(b + 1) : nullptr;
    blk.next_ks = more && kv_dtype_quantized(KD) ? it.k_scales(b + 1) : nullptr;
    blk.next_vs = more && kv_dtype_quantized(VD) ? it.v_scales(b + 1) : nullptr;
    int64_t h = 0;
    for (; h + 4 <= G; h += 4, blk.next_k = blk.next_v = blk.next_ks = blk.next_vs = nullptr)
      Heads::template run<KD, VD, 4>(it, blk, h, m, l, qsum);
    switch (G - h) {
      case 3: Heads::template run<KD, VD, 3>(it, blk, h, m, l, qsum); break;
      case 2: Heads::template run<KD, VD, 2>(it, blk, h, m, l, qsum); break;
      case 1: Heads::template run<KD, VD, 1>(it, blk, h, m, l, qsum); break;
      default: break;
    }
  }
  for (int64_t h = 0; h < G; ++h) {
    const float inv = 1.f / l[h];
    float* o = it.o + h * hd;
    for (int64_t d = 0; d < hd; ++d) o[d] *= inv;  // (vectorized with the ISA's flags)
  }
}

template <KvDtype KD, class Heads>
void attend_items16_k(const AttentionArgs& a, int64_t item0, int64_t item1) {
  void (*fn)(const AttnItem&) = nullptr;
  switch (a.kv.v_dtype) {
    case KvDtype::f32: fn = attend_blocks16<KD, KvDtype::f32, Heads>; break;
    case KvDtype::f16: fn = attend_blocks16<KD, KvDtype::f16, Heads>; break;
    case KvDtype::int8: fn = attend_blocks16<KD, KvDtype::int8, Heads>; break;
    case KvDtype::int4: fn = attend_blocks16<KD, KvDtype::int4, Heads>; break;
  }
  for (int64_t item = item0; item < item1; ++item) fn(attn_item(a, item));
}

// A kernel-table row from a block kernel: items [item0, item1) on the fast path when the shape allows
// (block size 16, head_dim a multiple of `hd_multiple`; an int4 V also needs hd/2 a multiple of it, so a
// vector of V never straddles the low and high nibbles), any K type with any V type; else on the portable
// kernel.
template <class Heads, int64_t hd_multiple>
void attention_items16(const AttentionArgs& a, int64_t item0, int64_t item1) {
  if (a.kv.block_size != 16 || a.head_dim % hd_multiple != 0 ||
      (a.kv.v_dtype == KvDtype::int4 && a.head_dim % (2 * hd_multiple) != 0))
    return generic_paged_attention(a, item0, item1);
  switch (a.kv.k_dtype) {
    case KvDtype::f32: return attend_items16_k<KvDtype::f32, Heads>(a, item0, item1);
    case KvDtype::f16: return attend_items16_k<KvDtype::f16, Heads>(a, item0, item1);
    case KvDtype::int8: return attend_items16_k<KvDtype::int8, Heads>(a, item0, item1);
    case KvDtype::int4: return attend_items16_k<KvDtype::int4, Heads>(a, item0, item1);
  }
}

}  // namespace
}  // namespace tinfer

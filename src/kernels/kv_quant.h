// The KV cache's byte format, in one place: where a layer's K and V values and scales sit inside a block
// (kv_layer_geometry), how one token's vector of one kv head is quantized on write (kv_quantize), and the
// reference dequantization the portable attention kernel and the tests read through (kv_dequant_*).
//
// Per layer and block (block_size slots), for element types t_k and t_v (tinfer/kv_dtype.h):
//   K block: codes [kv_heads][k_rows][block_size] then scales [kv_heads][block_size][scale_bytes(t_k)].
//            f32/f16/int8: k_rows = head_dim, row r holds dimension r of every slot (transposed: one
//            vector load gives a dimension of the whole block). int4: k_rows = ceil(head_dim / 2), the
//            byte at (row r, slot j) holds dimension r (low nibble) and r + ceil(head_dim / 2) (high) of slot
//            j, so a slot's bytes belong to it alone (tokens of one block are written in parallel).
//   V block: codes [block_size][kv_heads][v_head_bytes] then scales [block_size][kv_heads][scale_bytes(t_v)].
//            int4: byte i of a head's vector holds dimension i (low) and i + ceil(head_dim / 2) (high).
// Scales are fp16: int8 one scale (x = scale * code, code in [-127, 127], scale = max|x| / 127); int4 a
// (scale, min) pair (x = min + scale * code, code in [0, 15], scale = (max - min) / 15), the scale rounded
// up to fp16 and the min down, so every value is within half a step (scale / 2) of its dequantized code.
// Codes are chosen against the fp16 scale and min, so dequantization reproduces exactly what was chosen.
#pragma once
#include <cstdint>

#include "tinfer/kv_dtype.h"
#include "kernels/attention.h"

namespace tinfer {

constexpr int64_t kKvMaxHeadDim = 4096;  // the quantizers' scratch

// Fills every field of a KvLayerView except the k and v pointers.
KvLayerView kv_layer_geometry(KvDtype k_dtype, KvDtype v_dtype, int64_t n_kv_heads, int64_t head_dim,
                              int64_t block_size);

// Quantizes n values of one (token, kv head) into codes (int8: one int8 per value; int4: unpacked, one
// uint8 in [0, 15] per value) and the fp16 scale data (int8: [scale]; int4: [scale, min]).
void kv_quantize_int8(const float* x, int64_t n, int8_t* codes, uint16_t* scale);
void kv_quantize_int4(const float* x, int64_t n, uint8_t* codes, uint16_t* scale_min);

// int4 nibble packing of an n-value vector (see above): value i is in byte i % h, low nibble for i < h,
// high for i >= h, where h = ceil(n / 2). `stride` is the distance in bytes between bytes 0, 1, 2...
inline int64_t kv_int4_half(int64_t n) { return (n + 1) / 2; }
inline uint8_t kv_int4_get(const uint8_t* p, int64_t stride, int64_t n, int64_t i) {
  const int64_t h = kv_int4_half(n);
  const uint8_t b = p[(i % h) * stride];
  return i < h ? b & 0xF : b >> 4;
}
inline void kv_int4_set(uint8_t* p, int64_t stride, int64_t n, int64_t i, uint8_t code) {
  const int64_t h = kv_int4_half(n);
  uint8_t& b = p[(i % h) * stride];
  b = i < h ? uint8_t((b & 0xF0) | code) : uint8_t((b & 0x0F) | (code << 4));
}

// Writes one token's K and V ([n_kv_heads * head_dim] each, heads back to back) into slot `slot` of the
// blocks at kblock / vblock (this layer's block `b`: view.k + b * view.k_block_bytes, same for v), in the
// view's element types, quantizing where they are int8/int4.
void kv_write_token(const KvLayerView& view, int64_t n_kv_heads, int64_t head_dim, uint8_t* kblock,
                    uint8_t* vblock, int64_t slot, const float* k, const float* v);

// Reference reads of one block of one kv head, as floats: K as [head_dim][len] (dimension-major, like the
// stored tile), V as [len][head_dim], for slots 0..len. The portable attention kernel and the tests use these.
void kv_dequant_k_tile(const KvLayerView& view, int64_t head_dim, int32_t block, int64_t kvh, int64_t len, float* out);
void kv_dequant_v_tile(const KvLayerView& view, int64_t head_dim, int32_t block, int64_t kvh, int64_t len, float* out);

}  // namespace tinfer

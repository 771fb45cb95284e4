// The KV cache byte format (kernels/kv_quant.h): geometry, quantize-on-write and reference reads.
#include "kernels/kv_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"

namespace tinfer {

namespace {

// The fp16 nearest x from above (x >= 0) / from below: a scale rounded up and a min rounded down keep every
// value inside [min, min + 15 * scale] (int4) or [-127 * scale, 127 * scale] (int8), so no code is clamped
// and each value is within half a step of its code's. (Rounded to nearest, a scale in fp16's subnormal
// range, max|x| < 0.0078, lost up to 25% and clamped values by several steps; a min rounded up clamped
// the values below it, by up to half an fp16 ulp of the min.)
uint16_t fp16_up(float x) {
  const uint16_t h = f32_to_fp16(x);
  return fp16_to_f32(h) < x ? uint16_t(h + 1) : h;
}
uint16_t fp16_down(float x) {
  const uint16_t h = f32_to_fp16(x);
  if (!(fp16_to_f32(h) > x)) return h;
  return h & 0x8000 ? uint16_t(h + 1) : uint16_t(h - 1);  // one step toward -inf
}

}  // namespace

KvLayerView kv_layer_geometry(KvDtype kt, KvDtype vt, int64_t n_kv_heads, int64_t head_dim, int64_t block_size) {
  KvLayerView g;
  g.k_dtype = kt, g.v_dtype = vt, g.block_size = block_size;
  const bool k4 = kt == KvDtype::int4;
  const int64_t k_rows = k4 ? kv_int4_half(head_dim) : head_dim;
  g.k_row_bytes = k4 ? block_size : kv_code_bytes(kt, block_size);
  g.k_head_bytes = k_rows * g.k_row_bytes;
  g.k_scale_bytes = kv_dtype_info(kt).scale_bytes;
  g.k_scales_offset = n_kv_heads * g.k_head_bytes;
  g.k_block_bytes = g.k_scales_offset + n_kv_heads * block_size * g.k_scale_bytes;
  g.v_head_bytes = kv_code_bytes(vt, head_dim);
  g.v_slot_bytes = n_kv_heads * g.v_head_bytes;
  g.v_scale_bytes = kv_dtype_info(vt).scale_bytes;
  g.v_scales_offset = block_size * g.v_slot_bytes;
  g.v_block_bytes = g.v_scales_offset + block_size * n_kv_heads * g.v_scale_bytes;
  return g;
}

void kv_quantize_int8(const float* x, int64_t n, int8_t* codes, uint16_t* scale) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const uint16_t s16 = fp16_up(amax / 127.f);
  const float s = fp16_to_f32(s16);
  *scale = s16;
  const float inv = s > 0 ? 1.f / s : 0.f;
  for (int64_t i = 0; i < n; ++i) codes[i] = int8_t(std::clamp(std::nearbyint(x[i] * inv), -127.f, 127.f));
}

void kv_quantize_int4(const float* x, int64_t n, uint8_t* codes, uint16_t* scale_min) {
  float lo = x[0], hi = x[0];
  for (int64_t i = 1; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  const uint16_t mn16 = fp16_down(lo);
  const float mn = fp16_to_f32(mn16);
  const uint16_t s16 = fp16_up((hi - mn) / 15.f);
  const float s = fp16_to_f32(s16);
  scale_min[0] = s16, scale_min[1] = mn16;
  const float inv = s > 0 ? 1.f / s : 0.f;
  for (int64_t i = 0; i < n; ++i) codes[i] = uint8_t(std::clamp(std::nearbyint((x[i] - mn) * inv), 0.f, 15.f));
}

namespace {

// One (token, kv head) vector x[hd] into its type's codes: element i at p + i * stride (f32/f16/int8), or
// nibble-packed along stride (int4); scale data at sc.
void put_vector(KvDtype t, const float* x, int64_t hd, uint8_t* p, int64_t stride, uint8_t* sc) {
  switch (t) {
    case KvDtype::f32:
      for (int64_t i = 0; i < hd; ++i) std::memcpy(p + i * stride, &x[i], 4);
      return;
    case KvDtype::f16:
      for (int64_t i = 0; i < hd; ++i) {
        const uint16_t h = f32_to_fp16(x[i]);
        std::memcpy(p + i * stride, &h, 2);
      }
      return;
    case KvDtype::int8: {  // (head_dim <= kKvMaxHeadDim: checked by KvStorage)
      int8_t codes[4096];
      uint16_t s;
      kv_quantize_int8(x, hd, codes, &s);
      for (int64_t i = 0; i < hd; ++i) p[i * stride] = uint8_t(codes[i]);
      std::memcpy(sc, &s, 2);
      return;
    }
    case KvDtype::int4: {
      uint8_t codes[4096];
      uint16_t sm[2];
      kv_quantize_int4(x, hd, codes, sm);
      const int64_t h = kv_int4_half(hd);
      for (int64_t i = 0; i < h; ++i)
        p[i * stride] = uint8_t(codes[i] | (i + h < hd ? codes[i + h] << 4 : 0));
      std::memcpy(sc, sm, 4);
      return;
    }
  }
}

// Value i of a vector stored like put_vector's.
inline float get_value(KvDtype t, const uint8_t* p, int64_t stride, int64_t n, int64_t i, const uint8_t* sc) {
  switch (t) {
    case KvDtype::f32: {
      float f;
      std::memcpy(&f, p + i * stride, 4);
      return f;
    }
    case KvDtype::f16: {
      uint16_t h;
      std::memcpy(&h, p + i * stride, 2);
      return fp16_to_f32(h);
    }
    case KvDtype::int8: {
      uint16_t s;
      std::memcpy(&s, sc, 2);
      return fp16_to_f32(s) * float(int8_t(p[i * stride]));
    }
    case KvDtype::int4: {
      uint16_t sm[2];
      std::memcpy(sm, sc, 4);
      return fp16_to_f32(sm[1]) + fp16_to_f32(sm[0]) * float(kv_int4_get(p, stride, n, i));
    }
  }
  return 0;
}

// K: element (dimension i) of slot j's vector lives at row i (int4: row i % h), column j; the row stride is
// k_row_bytes and a column is j * (bytes per value) in.
int64_t k_column_offset(const KvLayerView& g, int64_t slot) {
  return g.k_dtype == KvDtype::int4 ? slot : slot * kv_dtype_info(g.k_dtype).value_bits / 8;
}
int64_t value_stride(KvDtype t) { return t == KvDtype::int4 ? 1 : kv_dtype_info(t).value_bits / 8; }

}  // namespace

void kv_write_token(const KvLayerView& g, int64_t n_kv_heads, int64_t hd, uint8_t* kblock, uint8_t* vblock,
                    int64_t slot, const float* k, const float* v) {
  for (int64_t h = 0; h < n_kv_heads; ++h) {
    put_vector(g.k_dtype, k + h * hd, hd, kblock + h * g.k_head_bytes + k_column_offset(g, slot), g.k_row_bytes,
               kblock + g.k_scales_offset + (h * g.block_size + slot) * g.k_scale_bytes);
    put_vector(g.v_dtype, v + h * hd, hd, vblock + slot * g.v_slot_bytes + h * g.v_head_bytes, value_stride(g.v_dtype),
               vblock + g.v_scales_offset + (slot * n_kv_heads + h) * g.v_scale_bytes);
  }
}

void kv_dequant_k_tile(const KvLayerView& g, int64_t hd, int32_t block, int64_t kvh, int64_t len, float* out) {
  const uint8_t* base = g.k + int64_t(block) * g.k_block_bytes;
  for (int64_t j = 0; j < len; ++j) {
    const uint8_t* p = base + kvh * g.k_head_bytes + k_column_offset(g, j);
    const uint8_t* sc = base + g.k_scales_offset + (kvh * g.block_size + j) * g.k_scale_bytes;
    for (int64_t d = 0; d < hd; ++d) out[d * len + j] = get_value(g.k_dtype, p, g.k_row_bytes, hd, d, sc);
  }
}

void kv_dequant_v_tile(const KvLayerView& g, int64_t hd, int32_t block, int64_t kvh, int64_t len, float* out) {
  const uint8_t* base = g.v + int64_t(block) * g.v_block_bytes;
  const int64_t n_kv_heads = g.v_slot_bytes / g.v_head_bytes;
  for (int64_t j = 0; j < len; ++j) {
    const uint8_t* p = base + j * g.v_slot_bytes + kvh * g.v_head_bytes;
    const uint8_t* sc = base + g.v_scales_offset + (j * n_kv_heads + kvh) * g.v_scale_bytes;
    for (int64_t d = 0; d < hd; ++d) out[j * hd + d] = get_value(g.v_dtype, p, value_stride(g.v_dtype), hd, d, sc);
  }
}

}  // namespace tinfer

// Q5_0 and Q5_1: blocks of 32 5-bit codes, the low 4 bits in qs (Q4_0's nibble order) and the fifth in
// qh (bit j = element j). Q5_0: x = d * (q - 16); Q5_1: x = d * q + m. Reference pair bit-exact with
// ggml's quantize_row_q5_{0,1}_ref / dequantize_row_q5_{0,1}; plus the code grid and weighted search.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/code_grid.h"
#include "quant/code_layout.h"
#include "quant/weighted_search.h"

namespace tinfer::quant_ref {

namespace {

template <class B>
void unpack(const B& b, uint8_t* L) {
  unpack_nibbles32(b.qs, L);
  add_fifth_bits32(b.qh, L);
}
template <class B>
void pack(const uint8_t* L, B& b) {
  pack_nibbles32(L, b.qs);
  pack_fifth_bits32(L, b.qh);
}

template <class B>
void codes(const B& b, int32_t* q) {
  uint8_t L[kQK];
  unpack(b, L);
  std::copy(L, L + kQK, q);
}
template <class B>
void put_codes(B& b, const int32_t* q) {
  uint8_t L[kQK];
  std::copy(q, q + kQK, L);
  pack(L, b);
}

void q5_0_grid_block(const BlockQ5_0& b, float* scale, float* offset) {
  const float d = fp16_to_f32(b.d);
  std::fill(scale, scale + kQK, d);
  std::fill(offset, offset + kQK, -16 * d);
}
void q5_1_grid_block(const BlockQ5_1& b, float* scale, float* offset) {
  std::fill(scale, scale + kQK, fp16_to_f32(b.d));
  std::fill(offset, offset + kQK, fp16_to_f32(b.m));
}

// Weighted: symmetric scale fit on codes -16..15, then the codes re-rounded to the stored fp16 d.
void q5_0_search(const float* x, const float* w, BlockQ5_0& b) {
  int32_t L[kQK];
  b.d = f32_to_fp16(weighted_scale_fit(kQK, -16, 15, x, w, L));
  round_to_grid(kQK, -16, 15, x, fp16_to_f32(b.d), 0.0f, L);
  for (int32_t& l : L) l += 16;
  put_codes(b, L);
}
// Weighted: affine fit with a free offset (m is any fp16), codes re-rounded to the stored d and m.
void q5_1_search(const float* x, const float* w, BlockQ5_1& b) {
  int32_t L[kQK];
  float m;
  b.d = f32_to_fp16(weighted_affine_fit(kQK, 31, x, w, L, &m, false));
  b.m = f32_to_fp16(m);
  round_to_grid(kQK, 0, 31, x, fp16_to_f32(b.d), fp16_to_f32(b.m), L);
  put_codes(b, L);
}

}  // namespace

void q5_0_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  uint8_t L[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_f32(b[i].d);
    unpack(b[i], L);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = (L[j] - 16) * d;
  }
}

// d = max / -16 (max: the signed value of largest magnitude, landing on code 0); +16.5 and truncation
// round half up around the zero point 16, as Q4_0 does with 8.
void q5_0_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    uint8_t L[kQK];
    for (int j = 0; j < kQK; ++j) L[j] = uint8_t(std::min<int>(31, static_cast<int8_t>(x[j] * id + 16.5f)));
    pack(L, b[i]);
  }
}

void q5_1_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  uint8_t L[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const float m = fp16_to_f32(b[i].m);
    unpack(b[i], L);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = L[j] * d + m;
  }
}

// d = (max - min) / 31, m = min; q = (x - min) / d + 0.5 truncated (no clamp, as ggml: the top value
// lands on 31.5 at most; the layout keeps 5 bits either way).
void q5_1_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < kQK; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    b[i].m = f32_to_fp16(min);
    uint8_t L[kQK];
    for (int j = 0; j < kQK; ++j) L[j] = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
    pack(L, b[i]);
  }
}

TINFER_DEFINE_CODE_GRID(q5_0, BlockQ5_0, kQK, q5_0_codes, codes<BlockQ5_0>, put_codes<BlockQ5_0>, q5_0_grid_block,
                        q5_0_search)
TINFER_DEFINE_CODE_GRID(q5_1, BlockQ5_1, kQK, q5_1_codes, codes<BlockQ5_1>, put_codes<BlockQ5_1>, q5_1_grid_block,
                        q5_1_search)

}  // namespace tinfer::quant_ref

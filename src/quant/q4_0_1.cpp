// Q4_0 and Q4_1: blocks of 32 4-bit codes; byte j holds element j (low nibble) and element j+16 (high
// nibble). Q4_0: x = d * (q - 8); Q4_1: x = d * q + m. Reference pair bit-exact with ggml's
// quantize_row_q4_{0,1}_ref / dequantize_row_q4_{0,1}; plus the code grid and weighted search.
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
void codes(const B& b, int32_t* q) {
  uint8_t L[kQK];
  unpack_nibbles32(b.qs, L);
  std::copy(L, L + kQK, q);
}
template <class B>
void put_codes(B& b, const int32_t* q) {
  uint8_t L[kQK];
  std::copy(q, q + kQK, L);
  pack_nibbles32(L, b.qs);
}

void q4_0_grid_block(const BlockQ4_0& b, float* scale, float* offset) {
  const float d = fp16_to_f32(b.d);
  std::fill(scale, scale + kQK, d);
  std::fill(offset, offset + kQK, -8 * d);
}
void q4_1_grid_block(const BlockQ4_1& b, float* scale, float* offset) {
  std::fill(scale, scale + kQK, fp16_to_f32(b.d));
  std::fill(offset, offset + kQK, fp16_to_f32(b.m));
}

// Weighted: symmetric scale fit on codes -8..7 (either end may take the largest value), then the codes
// re-rounded to the stored fp16 d.
void q4_0_search(const float* x, const float* w, BlockQ4_0& b) {
  int32_t L[kQK];
  b.d = f32_to_fp16(weighted_scale_fit(kQK, -8, 7, x, w, L));
  round_to_grid(kQK, -8, 7, x, fp16_to_f32(b.d), 0.0f, L);
  for (int32_t& l : L) l += 8;
  put_codes(b, L);
}
// Weighted: affine fit with a free offset (m is any fp16), codes re-rounded to the stored d and m.
void q4_1_search(const float* x, const float* w, BlockQ4_1& b) {
  int32_t L[kQK];
  float m;
  b.d = f32_to_fp16(weighted_affine_fit(kQK, 15, x, w, L, &m, false));
  b.m = f32_to_fp16(m);
  round_to_grid(kQK, 0, 15, x, fp16_to_f32(b.d), fp16_to_f32(b.m), L);
  put_codes(b, L);
}

}  // namespace

void q4_0_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  uint8_t L[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_f32(b[i].d);
    unpack_nibbles32(b[i].qs, L);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = (L[j] - 8) * d;
  }
}

// d = max / -8 where max is the signed value of largest magnitude, so that value maps to q = 0
// (the asymmetric end of [-8, 7]) and the full range is used.
void q4_0_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    // +8.5 then truncation = round half up around the zero point 8; the sum is >= 0.5 here.
    uint8_t L[kQK];
    for (int j = 0; j < kQK; ++j) L[j] = uint8_t(std::min<int>(15, static_cast<int8_t>(x[j] * id + 8.5f)));
    pack_nibbles32(L, b[i].qs);
  }
}

void q4_1_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  uint8_t L[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const float m = fp16_to_f32(b[i].m);
    unpack_nibbles32(b[i].qs, L);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = L[j] * d + m;
  }
}

// d = (max - min) / 15, m = min; q = round_half_up((x - min) / d).
void q4_1_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < kQK; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    b[i].m = f32_to_fp16(min);
    uint8_t L[kQK];
    for (int j = 0; j < kQK; ++j) L[j] = uint8_t(std::min<int>(15, static_cast<int8_t>((x[j] - min) * id + 0.5f)));
    pack_nibbles32(L, b[i].qs);
  }
}

TINFER_DEFINE_CODE_GRID(q4_0, BlockQ4_0, kQK, q4_0_codes, codes<BlockQ4_0>, put_codes<BlockQ4_0>, q4_0_grid_block,
                        q4_0_search)
TINFER_DEFINE_CODE_GRID(q4_1, BlockQ4_1, kQK, q4_1_codes, codes<BlockQ4_1>, put_codes<BlockQ4_1>, q4_1_grid_block,
                        q4_1_search)

}  // namespace tinfer::quant_ref

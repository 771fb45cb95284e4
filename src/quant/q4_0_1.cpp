// Q4_0 and Q4_1 reference (de)quantizers: blocks of 32 4-bit quants; byte j holds element j (low
// nibble) and element j+16 (high nibble). Bit-exact with ggml's quantize_row_q4_{0,1}_ref.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/ref_quants.h"

namespace tinfer::quant_ref {

constexpr int kHalf = kQK / 2;

void q4_0_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_f32(b[i].d);
    float* y = dst + i * kQK;
    for (int j = 0; j < kHalf; ++j) {
      y[j] = ((b[i].qs[j] & 0x0F) - 8) * d;
      y[j + kHalf] = ((b[i].qs[j] >> 4) - 8) * d;
    }
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
    for (int j = 0; j < kHalf; ++j) {
      // +8.5 then truncation = round half up around the zero point 8; the sum is >= 0.5 here.
      const uint8_t q0 = std::min<int>(15, static_cast<int8_t>(x[j] * id + 8.5f));
      const uint8_t q1 = std::min<int>(15, static_cast<int8_t>(x[j + kHalf] * id + 8.5f));
      b[i].qs[j] = uint8_t(q0 | (q1 << 4));
    }
  }
}

void q4_1_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const float m = fp16_to_f32(b[i].m);
    float* y = dst + i * kQK;
    for (int j = 0; j < kHalf; ++j) {
      y[j] = (b[i].qs[j] & 0x0F) * d + m;
      y[j + kHalf] = (b[i].qs[j] >> 4) * d + m;
    }
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
    for (int j = 0; j < kHalf; ++j) {
      const uint8_t q0 = std::min<int>(15, static_cast<int8_t>((x[j] - min) * id + 0.5f));
      const uint8_t q1 = std::min<int>(15, static_cast<int8_t>((x[j + kHalf] - min) * id + 0.5f));
      b[i].qs[j] = uint8_t(q0 | (q1 << 4));
    }
  }
}

}  // namespace tinfer::quant_ref

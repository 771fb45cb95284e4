// Q8_0 reference (de)quantizer: blocks of 32, x = d * q, d = amax / 127 (fp16), q = round(x / d).
// Bit-exact with ggml's quantize_row_q8_0_ref (roundf = half away from zero).
#include <algorithm>
#include <cmath>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/ref_quants.h"

namespace tinfer::quant_ref {

void q8_0_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[i * kQK + j] = b[i].qs[j] * d;
  }
}

void q8_0_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    // d is rounded to fp16 for storage, but the quants use the unrounded fp32 d (as ggml does).
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) b[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  }
}

}  // namespace tinfer::quant_ref

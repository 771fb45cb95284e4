// Q8_0: blocks of 32, x = d * q with int8 codes q. Reference pair bit-exact with ggml's
// quantize_row_q8_0_ref (d = amax / 127, roundf = half away from zero) / dequantize_row_q8_0; plus the
// code grid (codes are the int8 themselves) and weighted search.
#include <algorithm>
#include <cmath>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/code_grid.h"
#include "quant/weighted_search.h"

namespace tinfer::quant_ref {

namespace {

void codes(const BlockQ8_0& b, int32_t* q) { std::copy(b.qs, b.qs + kQK, q); }
void put_codes(BlockQ8_0& b, const int32_t* q) {
  for (int j = 0; j < kQK; ++j) b.qs[j] = int8_t(q[j]);
}
void grid_block(const BlockQ8_0& b, float* scale, float* offset) {
  std::fill(scale, scale + kQK, fp16_to_f32(b.d));
  std::fill(offset, offset + kQK, 0.0f);
}

// Weighted: symmetric scale fit on -127..127 (the reference's range: -128 stays unused, as in ggml's
// files), codes re-rounded to the stored fp16 d.
void search(const float* x, const float* w, BlockQ8_0& b) {
  int32_t L[kQK];
  b.d = f32_to_fp16(weighted_scale_fit(kQK, -127, 127, x, w, L));
  round_to_grid(kQK, -127, 127, x, fp16_to_f32(b.d), 0.0f, L);
  put_codes(b, L);
}

}  // namespace

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

TINFER_DEFINE_CODE_GRID(q8_0, BlockQ8_0, kQK, q8_0_codes, codes, put_codes, grid_block, search)

}  // namespace tinfer::quant_ref

// Q2_K: super-blocks of 256 = 16 sub-blocks of 16, x = d*(sc&15)*q - dmin*(sc>>4) with a 4-bit scale and
// a 4-bit min per sub-block (one byte of `scales`) and 2-bit codes in 2-bit planes. Reference pair
// bit-exact with ggml's quantize_row_q2_K_ref / dequantize_row_q2_K; plus the code grid and weighted search.
#include <algorithm>
#include <cmath>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/code_grid.h"
#include "quant/code_layout.h"
#include "quant/k_quant_search.h"
#include "quant/weighted_search.h"

namespace tinfer::quant_ref {

namespace {

constexpr int kSub = 16;             // elements per sub-block
constexpr int kNSub = kQK_K / kSub;  // 16 sub-blocks
constexpr int kNmax = 3;             // codes 0..3

// Codes against the scales as stored; a sub-block with a zero scale keeps the search's codes.
void requantize(const float* x, const BlockQ2_K& y, uint8_t* L) {
  for (int j = 0; j < kNSub; ++j) {
    const float d = fp16_to_f32(y.d) * (y.scales[j] & 0xF);
    if (d == 0.0f) continue;
    const float dm = fp16_to_f32(y.dmin) * (y.scales[j] >> 4);
    for (int ii = 0; ii < kSub; ++ii) {
      const int l = nearest_int((x[kSub * j + ii] + dm) / d);
      L[kSub * j + ii] = uint8_t(std::max(0, std::min(kNmax, l)));
    }
  }
}

void quantize_block_ref(const float* x, BlockQ2_K& y) {
  uint8_t L[kQK_K];
  uint8_t Laux[kSub];
  float weights[kSub];
  float mins[kNSub], scales[kNSub];
  constexpr float q4scale = 15.f;  // the 4-bit levels of the scales and mins

  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kNSub; ++j) {
    // Weights |x| and mean absolute error: at 2 bits, fitting the large values matters most.
    for (int l = 0; l < kSub; ++l) weights[l] = std::fabs(x[kSub * j + l]);
    scales[j] =
        make_qkx2_quants(kSub, kNmax, x + kSub * j, weights, L + kSub * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  // Scale levels in the low nibbles, min levels ORed into the high nibbles; both against their maxima
  // (no clamp: the maximum lands on 15; the uint8_t stores are ggml's).
  if (max_scale > 0) {
    const float iscale = q4scale / max_scale;
    for (int j = 0; j < kNSub; ++j) y.scales[j] = uint8_t(nearest_int(iscale * scales[j]));
    y.d = f32_to_fp16(max_scale / q4scale);
  } else {
    for (int j = 0; j < kNSub; ++j) y.scales[j] = 0;
    y.d = f32_to_fp16(0.f);
  }
  if (max_min > 0) {
    const float iscale = q4scale / max_min;
    for (int j = 0; j < kNSub; ++j) y.scales[j] = uint8_t(y.scales[j] | (nearest_int(iscale * mins[j]) << 4));
    y.dmin = f32_to_fp16(max_min / q4scale);
  } else {
    y.dmin = f32_to_fp16(0.f);
  }
  requantize(x, y, L);
  pack_crumbs_k(L, y.qs);
}

// Weighted: affine fit per sub-block (offset <= 0: the min is stored unsigned), then the 4-bit levels of
// scales and mins fitted with the error their rounding causes (e^2 * sum w L^2 for a scale, e^2 * sum w
// for a min), re-rounded to the stored fp16 super-scales, codes re-rounded to the result.
void search(const float* x, const float* w, BlockQ2_K& y) {
  uint8_t L[kQK_K];
  float scales[kNSub], mins[kNSub], w_scale[kNSub], w_min[kNSub];
  weighted_sub_block_fits(kNSub, kSub, kNmax, x, w, L, scales, mins, w_scale, w_min);
  int32_t qs[kNSub], qm[kNSub];
  y.d = f32_to_fp16(weighted_scale_fit(kNSub, 0, 15, scales, w_scale, qs));
  y.dmin = f32_to_fp16(weighted_scale_fit(kNSub, 0, 15, mins, w_min, qm));
  round_to_grid(kNSub, 0, 15, scales, fp16_to_f32(y.d), 0.0f, qs);
  round_to_grid(kNSub, 0, 15, mins, fp16_to_f32(y.dmin), 0.0f, qm);
  for (int j = 0; j < kNSub; ++j) y.scales[j] = uint8_t(qs[j] | (qm[j] << 4));
  requantize(x, y, L);
  pack_crumbs_k(L, y.qs);
}

void codes(const BlockQ2_K& b, int32_t* q) {
  uint8_t L[kQK_K];
  unpack_crumbs_k(b.qs, L);
  for (int e = 0; e < kQK_K; ++e) q[e] = L[e];
}
void put_codes(BlockQ2_K& b, const int32_t* q) {
  uint8_t L[kQK_K];
  for (int e = 0; e < kQK_K; ++e) L[e] = uint8_t(q[e]);
  pack_crumbs_k(L, b.qs);
}
void grid_block(const BlockQ2_K& b, float* scale, float* offset) {
  const float d = fp16_to_f32(b.d), dmin = fp16_to_f32(b.dmin);
  for (int j = 0; j < kNSub; ++j) {
    std::fill(scale + kSub * j, scale + kSub * (j + 1), d * (b.scales[j] & 0xF));
    std::fill(offset + kSub * j, offset + kSub * (j + 1), -(dmin * (b.scales[j] >> 4)));
  }
}

}  // namespace

void q2_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ2_K*>(src);
  uint8_t L[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    unpack_crumbs_k(b[i].qs, L);
    float* y = dst + i * kQK_K;
    for (int j = 0; j < kNSub; ++j) {
      const float dl = d * (b[i].scales[j] & 0xF), ml = dmin * (b[i].scales[j] >> 4);
      for (int l = 0; l < kSub; ++l) y[kSub * j + l] = dl * L[kSub * j + l] - ml;
    }
  }
}

void q2_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ2_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_block_ref(src + i * kQK_K, b[i]);
}

TINFER_DEFINE_CODE_GRID(q2_k, BlockQ2_K, kQK_K, q2_k_codes, codes, put_codes, grid_block, search)

}  // namespace tinfer::quant_ref

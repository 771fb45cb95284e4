// Q3_K: super-blocks of 256 = 16 sub-blocks of 16, x = d * (sc - 32) * (q - 4) with a 6-bit scale per
// sub-block and 3-bit codes q: the low 2 bits in 2-bit planes (qs), the third in a high-bit plane (hmask;
// ggml reads a clear bit as "subtract 4"). Reference pair bit-exact with ggml's quantize_row_q3_K_ref /
// dequantize_row_q3_K; plus the code grid and weighted search.
#include <algorithm>
#include <cmath>
#include <cstring>

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

// scales[12] packing of 16 6-bit levels l (scale = l - 32): bytes 0-7 hold the low nibbles of levels
// 0-7 (low half) and 8-15 (high half); bytes 8-11 hold the top 2 bits, level j at bits 2*(j/4) of byte
// 8 + j%4.
int scale_level(const uint8_t* s, int j) {
  const int low = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
  return low | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
}
void set_scale_levels(const uint8_t* l, uint8_t* s) {
  std::memset(s, 0, 12);
  for (int j = 0; j < kNSub; ++j) {
    if (j < 8)
      s[j] = l[j] & 0xF;
    else
      s[j - 8] = uint8_t(s[j - 8] | ((l[j] & 0xF) << 4));
    s[8 + j % 4] = uint8_t(s[8 + j % 4] | ((l[j] >> 4) << (2 * (j / 4))));
  }
}

void pack(const uint8_t* L, BlockQ3_K& b) {
  pack_crumbs_k(L, b.qs);
  pack_high_bits_k(L, 2, b.hmask);
}
void unpack(const BlockQ3_K& b, uint8_t* L) {
  unpack_crumbs_k(b.qs, L);
  add_high_bits_k(b.hmask, 2, L);
}

// Codes (0..7) against the scales as stored; a sub-block with a zero scale keeps the search's codes.
void requantize(const float* x, const BlockQ3_K& y, uint8_t* L) {
  for (int j = 0; j < kNSub; ++j) {
    const int8_t sc = int8_t(scale_level(y.scales, j) - 32);
    const float d = fp16_to_f32(y.d) * sc;
    if (d == 0.0f) continue;
    for (int ii = 0; ii < kSub; ++ii) {
      const int l = nearest_int(x[kSub * j + ii] / d);
      L[kSub * j + ii] = uint8_t(std::max(-4, std::min(3, l)) + 4);
    }
  }
}

void quantize_block_ref(const float* x, BlockQ3_K& y) {
  int8_t L[kQK_K];  // codes 0..7
  float scales[kNSub];
  float max_scale = 0, amax = 0;  // the signed sub-block scale of largest magnitude
  for (int j = 0; j < kNSub; ++j) {
    scales[j] = make_q3_quants(kSub, 4, x + kSub * j, L + kSub * j);
    const float scale = std::fabs(scales[j]);
    if (scale > amax) {
      amax = scale;
      max_scale = scales[j];
    }
  }
  // Sub-block scales to 6-bit levels against the largest, which lands on level 0 (scale -32).
  uint8_t levels[kNSub] = {};
  if (max_scale != 0.0f) {
    const float iscale = -32.f / max_scale;
    for (int j = 0; j < kNSub; ++j) {
      const int8_t l = int8_t(nearest_int(iscale * scales[j]));
      levels[j] = uint8_t(std::max<int8_t>(-32, std::min<int8_t>(31, l)) + 32);
    }
    y.d = f32_to_fp16(1 / iscale);
  } else {
    y.d = f32_to_fp16(0.f);
  }
  set_scale_levels(levels, y.scales);
  uint8_t U[kQK_K];
  for (int e = 0; e < kQK_K; ++e) U[e] = uint8_t(L[e]);
  requantize(x, y, U);
  pack(U, y);
}

// Weighted: symmetric fit per sub-block on codes -4..3, then the 6-bit levels (scale -32..31) fitted
// with the error their rounding causes (e^2 * sum w L^2), re-rounded to the stored fp16 d, codes
// re-rounded to the result.
void search(const float* x, const float* w, BlockQ3_K& y) {
  int32_t L[kQK_K];
  float scales[kNSub], w_scale[kNSub];
  weighted_sub_block_scale_fits(kNSub, kSub, -4, 3, x, w, L, scales, w_scale);
  uint8_t U[kQK_K];
  for (int e = 0; e < kQK_K; ++e) U[e] = uint8_t(L[e] + 4);
  int32_t q[kNSub];
  y.d = f32_to_fp16(weighted_scale_fit(kNSub, -32, 31, scales, w_scale, q));
  round_to_grid(kNSub, -32, 31, scales, fp16_to_f32(y.d), 0.0f, q);
  uint8_t levels[kNSub];
  for (int j = 0; j < kNSub; ++j) levels[j] = uint8_t(q[j] + 32);
  set_scale_levels(levels, y.scales);
  requantize(x, y, U);
  pack(U, y);
}

void codes(const BlockQ3_K& b, int32_t* q) {
  uint8_t L[kQK_K];
  unpack(b, L);
  for (int e = 0; e < kQK_K; ++e) q[e] = L[e];
}
void put_codes(BlockQ3_K& b, const int32_t* q) {
  uint8_t L[kQK_K];
  for (int e = 0; e < kQK_K; ++e) L[e] = uint8_t(q[e]);
  pack(L, b);
}
void grid_block(const BlockQ3_K& b, float* scale, float* offset) {
  const float d = fp16_to_f32(b.d);
  for (int j = 0; j < kNSub; ++j) {
    const float dl = d * (scale_level(b.scales, j) - 32);
    std::fill(scale + kSub * j, scale + kSub * (j + 1), dl);
    std::fill(offset + kSub * j, offset + kSub * (j + 1), -4 * dl);
  }
}

}  // namespace

void q3_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ3_K*>(src);
  uint8_t L[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = fp16_to_f32(b[i].d);
    unpack(b[i], L);
    float* y = dst + i * kQK_K;
    for (int j = 0; j < kNSub; ++j) {
      const float dl = d * (scale_level(b[i].scales, j) - 32);
      for (int l = 0; l < kSub; ++l) y[kSub * j + l] = dl * (L[kSub * j + l] - 4);
    }
  }
}

void q3_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_block_ref(src + i * kQK_K, b[i]);
}

TINFER_DEFINE_CODE_GRID(q3_k, BlockQ3_K, kQK_K, q3_k_codes, codes, put_codes, grid_block, search)

}  // namespace tinfer::quant_ref

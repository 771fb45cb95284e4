// Q6_K: super-blocks of 256 = 16 sub-blocks of 16, x = d * sc * (q - 32) with int8 sc per sub-block and
// 6-bit codes (4 low bits in ql, 2 high bits in qh). Reference pair bit-exact with ggml's
// quantize_row_q6_K_ref / dequantize_row_q6_K; plus the code grid and weighted search.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/code_grid.h"
#include "quant/k_quant_search.h"
#include "quant/weighted_search.h"

namespace tinfer::quant_ref {

namespace {

constexpr int kSub = 16;             // elements per sub-block
constexpr int kNSub = kQK_K / kSub;  // 16 sub-blocks
constexpr float kGroupMaxEps = 1e-15f;

// Codes (0..63) against the scales as stored; a zero scale keeps the search's codes.
void requantize(const float* x, const BlockQ6_K& y, int8_t* L) {
  for (int j = 0; j < kNSub; ++j) {
    const float d = fp16_to_f32(y.d) * y.scales[j];
    if (d == 0.0f) continue;
    for (int ii = 0; ii < kSub; ++ii) {
      const int l = nearest_int(x[kSub * j + ii] / d);
      L[kSub * j + ii] = int8_t(std::max(-32, std::min(31, l)) + 32);
    }
  }
}

// Per 128 elements: ql[0..31] = q[l] | q[l+64] << 4, ql[32..63] = q[l+32] | q[l+96] << 4 (low
// 4 bits); qh[l] holds the top 2 bits of q[l], q[l+32], q[l+64], q[l+96] at bits 0, 2, 4, 6.
void pack(const int8_t* L, BlockQ6_K& y) {
  uint8_t* ql = y.ql;
  uint8_t* qh = y.qh;
  for (int j = 0; j < kQK_K; j += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
      const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
      ql[l] = uint8_t(q1 | (q3 << 4));
      ql[l + 32] = uint8_t(q2 | (q4 << 4));
      qh[l] = uint8_t(((L[j + l] >> 4) & 3) | (((L[j + l + 32] >> 4) & 3) << 2) | (((L[j + l + 64] >> 4) & 3) << 4) |
                      (((L[j + l + 96] >> 4) & 3) << 6));
    }
  }
}
void unpack(const BlockQ6_K& y, int8_t* L) {
  const uint8_t* ql = y.ql;
  const uint8_t* qh = y.qh;
  for (int j = 0; j < kQK_K; j += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      L[j + l] = int8_t((ql[l] & 0xF) | ((qh[l] & 3) << 4));
      L[j + l + 32] = int8_t((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
      L[j + l + 64] = int8_t((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      L[j + l + 96] = int8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
}

void quantize_block(const float* x, BlockQ6_K& y) {
  int8_t L[kQK_K];  // quants offset by 32, in [0, 63]
  float scales[kNSub];

  float max_scale = 0, max_abs_scale = 0;  // the signed scale of largest magnitude
  for (int ib = 0; ib < kNSub; ++ib) {
    scales[ib] = make_qx_quants_rmse1(kSub, 32, x + kSub * ib, L + kSub * ib);
    const float abs_scale = std::fabs(scales[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[ib];
    }
  }
  if (max_abs_scale < kGroupMaxEps) {  // all-zero super-block
    std::memset(&y, 0, sizeof(y));
    return;
  }

  // Sub-block scales to int8 against the largest: the largest maps to -128 (clamped to 127 above).
  const float iscale = -128.f / max_scale;
  y.d = f32_to_fp16(1 / iscale);
  for (int ib = 0; ib < kNSub; ++ib) y.scales[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));

  requantize(x, y, L);
  pack(L, y);
}

// Weighted: symmetric fit per sub-block on codes -32..31, then the int8 scales (-128..127) fitted with
// the error their rounding causes (e^2 * sum w L^2), re-rounded to the stored fp16 d, codes re-rounded.
void search(const float* x, const float* w, BlockQ6_K& y) {
  int32_t Ls[kQK_K];  // signed codes -32..31
  float scales[kNSub], w_scale[kNSub];
  weighted_sub_block_scale_fits(kNSub, kSub, -32, 31, x, w, Ls, scales, w_scale);
  int8_t L[kQK_K];
  for (int e = 0; e < kQK_K; ++e) L[e] = int8_t(Ls[e] + 32);
  int32_t q[kNSub];
  y.d = f32_to_fp16(weighted_scale_fit(kNSub, -128, 127, scales, w_scale, q));
  round_to_grid(kNSub, -128, 127, scales, fp16_to_f32(y.d), 0.0f, q);
  for (int j = 0; j < kNSub; ++j) y.scales[j] = int8_t(q[j]);
  requantize(x, y, L);
  pack(L, y);
}

void codes(const BlockQ6_K& b, int32_t* q) {
  int8_t L[kQK_K];
  unpack(b, L);
  for (int e = 0; e < kQK_K; ++e) q[e] = L[e];
}
void put_codes(BlockQ6_K& b, const int32_t* q) {
  int8_t L[kQK_K];
  for (int e = 0; e < kQK_K; ++e) L[e] = int8_t(q[e]);
  pack(L, b);
}
void grid_block(const BlockQ6_K& b, float* scale, float* offset) {
  const float d = fp16_to_f32(b.d);
  for (int j = 0; j < kNSub; ++j) {
    const float dl = d * b.scales[j];
    std::fill(scale + kSub * j, scale + kSub * (j + 1), dl);
    std::fill(offset + kSub * j, offset + kSub * (j + 1), -32 * dl);
  }
}

}  // namespace

void q6_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  int8_t L[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = fp16_to_f32(b[i].d);
    unpack(b[i], L);
    float* y = dst + i * kQK_K;
    for (int j = 0; j < kNSub; ++j)
      for (int l = 0; l < kSub; ++l) y[kSub * j + l] = d * b[i].scales[j] * (L[kSub * j + l] - 32);
  }
}

void q6_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_block(src + i * kQK_K, b[i]);
}

TINFER_DEFINE_CODE_GRID(q6_k, BlockQ6_K, kQK_K, q6_k_codes, codes, put_codes, grid_block, search)

}  // namespace tinfer::quant_ref

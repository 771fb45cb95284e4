// Q6_K reference (de)quantizer: super-blocks of 256 = 16 sub-blocks of 16, x = d * sc * (q - 32)
// with int8 sc per sub-block. Bit-exact with ggml's quantize_row_q6_K_ref / dequantize_row_q6_K.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/k_quant_search.h"
#include "quant/ref_quants.h"

namespace tinfer::quant_ref {

namespace {

constexpr int kSub = 16;             // elements per sub-block
constexpr int kNSub = kQK_K / kSub;  // 16 sub-blocks
constexpr float kGroupMaxEps = 1e-15f;

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

  // Re-quantize against the stored scales; a zero scale keeps the search's quants.
  for (int j = 0; j < kNSub; ++j) {
    const float d = fp16_to_f32(y.d) * y.scales[j];
    if (d == 0.0f) continue;
    for (int ii = 0; ii < kSub; ++ii) {
      const int l = nearest_int(x[kSub * j + ii] / d);
      L[kSub * j + ii] = int8_t(std::max(-32, std::min(31, l)) + 32);
    }
  }

  // Per 128 elements: ql[0..31] = q[l] | q[l+64] << 4, ql[32..63] = q[l+32] | q[l+96] << 4 (low
  // 4 bits); qh[l] holds the top 2 bits of q[l], q[l+32], q[l+64], q[l+96] at bits 0, 2, 4, 6.
  uint8_t* ql = y.ql;
  uint8_t* qh = y.qh;
  for (int j = 0; j < kQK_K; j += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
      const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
      ql[l] = uint8_t(q1 | (q3 << 4));
      ql[l + 32] = uint8_t(q2 | (q4 << 4));
      qh[l] = uint8_t((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                      ((L[j + l + 96] >> 4) << 6));
    }
  }
}

}  // namespace

void q6_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    float* y = dst + i * kQK_K;
    for (int j = 0; j < kQK_K; j += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
    }
  }
}

void q6_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_block(src + i * kQK_K, b[i]);
}

}  // namespace tinfer::quant_ref

// Q4_K reference (de)quantizer: super-blocks of 256 = 8 sub-blocks of 32, x = d*sc*q - dmin*mn with
// 6-bit sc/mn per sub-block. Bit-exact with ggml's quantize_row_q4_K_ref / dequantize_row_q4_K.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/k_quant_search.h"
#include "quant/ref_quants.h"

namespace tinfer::quant_ref {

namespace {

constexpr int kSub = 32;             // elements per sub-block
constexpr int kNSub = kQK_K / kSub;  // 8 sub-blocks

// scales[12] packing of 8 (sc, mn) 6-bit pairs:
//   bytes 0-3:  sc[0..3] low 6 bits, top 2 bits = sc[4..7] >> 4
//   bytes 4-7:  mn[0..3] low 6 bits, top 2 bits = mn[4..7] >> 4
//   bytes 8-11: low nibble = sc[4..7] & 15, high nibble = mn[4..7] & 15
void get_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *mn = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void quantize_block(const float* x, BlockQ4_K& y) {
  uint8_t L[kQK_K];
  uint8_t Laux[kSub];
  float weights[kSub];
  float mins[kNSub], scales[kNSub];

  float max_scale = 0, max_min = 0;  // scales are positive because the min is subtracted
  for (int j = 0; j < kNSub; ++j) {
    const float* xs = x + kSub * j;
    // Weight each value by |x| plus the sub-block RMS: favour large values, but not exclusively.
    float sum_x2 = 0;
    for (int l = 0; l < kSub; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / kSub);
    for (int l = 0; l < kSub; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = make_qkx2_quants(kSub, 15, xs, weights, L + kSub * j, &mins[j], Laux, -1.f, 0.1f, 20, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  // Quantize the 8 scales and 8 mins to 6 bits against their maxima.
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(y.scales, 0, sizeof(y.scales));
  for (int j = 0; j < kNSub; ++j) {
    // The uint8_t truncation before the clamp is deliberate (it is what ggml does).
    const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      y.scales[j] = ls;
      y.scales[j + 4] = lm;
    } else {
      y.scales[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
      y.scales[j - 4] |= uint8_t((ls >> 4) << 6);
      y.scales[j] |= uint8_t((lm >> 4) << 6);
    }
  }
  y.d = f32_to_fp16(max_scale / 63.f);
  y.dmin = f32_to_fp16(max_min / 63.f);

  // Re-quantize against the scales as stored (fp16 d times 6-bit sc); a zero scale keeps the
  // search's quants, which then dequantize to -dmin*mn regardless.
  for (int j = 0; j < kNSub; ++j) {
    uint8_t sc, mn;
    get_scale_min(j, y.scales, &sc, &mn);
    const float d = fp16_to_f32(y.d) * sc;
    if (d == 0.0f) continue;
    const float dm = fp16_to_f32(y.dmin) * mn;
    for (int ii = 0; ii < kSub; ++ii) {
      const int l = nearest_int((x[kSub * j + ii] + dm) / d);
      L[kSub * j + ii] = uint8_t(std::max(0, std::min(15, l)));
    }
  }

  // qs: each 32-byte group holds sub-block 2k in the low nibbles and 2k+1 in the high nibbles.
  uint8_t* q = y.qs;
  for (int j = 0; j < kQK_K; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
    q += 32;
  }
}

}  // namespace

void q4_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const float dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    float* y = dst + i * kQK_K;
    for (int j = 0, is = 0; j < kQK_K; j += 64, is += 2, q += 32) {
      uint8_t sc, mn;
      get_scale_min(is, b[i].scales, &sc, &mn);
      const float d1 = d * sc, m1 = dmin * mn;
      get_scale_min(is + 1, b[i].scales, &sc, &mn);
      const float d2 = d * sc, m2 = dmin * mn;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    }
  }
}

void q4_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_block(src + i * kQK_K, b[i]);
}

}  // namespace tinfer::quant_ref

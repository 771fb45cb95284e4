// The Q4_K / Q5_K shared half (see q45_k_shared.h). quantize_ref is bit-exact with ggml's reference:
// same loop order and float expression order (compiled with -ffp-contract=off).
#include "quant/q45_k_shared.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/k_quant_search.h"
#include "quant/weighted_search.h"

namespace tinfer::quant_ref::q45k {

void get_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *mn = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void set_scales_mins(const uint8_t* ls, const uint8_t* lm, uint8_t* q) {
  std::memset(q, 0, 12);
  for (int j = 0; j < kNSub; ++j) {
    if (j < 4) {
      q[j] = ls[j];
      q[j + 4] = lm[j];
    } else {
      q[j + 4] = uint8_t((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      q[j - 4] |= uint8_t((ls[j] >> 4) << 6);
      q[j] |= uint8_t((lm[j] >> 4) << 6);
    }
  }
}

namespace {

// Codes against the scales as stored (fp16 d times 6-bit sc); a sub-block whose scale is zero keeps
// the search's codes, which then dequantize to -dmin*mn regardless.
void requantize(const float* x, int nmax, const ScaleMin& s, uint8_t* L) {
  for (int j = 0; j < kNSub; ++j) {
    uint8_t sc, mn;
    get_scale_min(j, s.scales, &sc, &mn);
    const float d = fp16_to_f32(s.d) * sc;
    if (d == 0.0f) continue;
    const float dm = fp16_to_f32(s.dmin) * mn;
    for (int ii = 0; ii < kSub; ++ii) {
      const int l = nearest_int((x[kSub * j + ii] + dm) / d);
      L[kSub * j + ii] = uint8_t(std::max(0, std::min(nmax, l)));
    }
  }
}

}  // namespace

void quantize_ref(const float* x, const RefSearch& p, ScaleMin& s, uint8_t* L) {
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
    scales[j] =
        make_qkx2_quants(kSub, p.nmax, xs, weights, L + kSub * j, &mins[j], Laux, p.rmin, p.rdelta, p.nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  // Quantize the 8 scales and 8 mins to 6 bits against their maxima.
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[kNSub], lm[kNSub];
  for (int j = 0; j < kNSub; ++j) {
    // The uint8_t truncation before the clamp is deliberate (it is what ggml does).
    ls[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
  }
  set_scales_mins(ls, lm, s.scales);
  s.d = f32_to_fp16(max_scale / 63.f);
  s.dmin = f32_to_fp16(max_min / 63.f);
  requantize(x, p.nmax, s, L);
}

void quantize_weighted(const float* x, const float* w, int nmax, ScaleMin& s, uint8_t* L) {
  float scales[kNSub], mins[kNSub], w_scale[kNSub], w_min[kNSub];
  weighted_sub_block_fits(kNSub, kSub, nmax, x, w, L, scales, mins, w_scale, w_min);
  int32_t qs[kNSub], qm[kNSub];
  const float d = weighted_scale_fit(kNSub, 0, 63, scales, w_scale, qs);
  const float dmin = weighted_scale_fit(kNSub, 0, 63, mins, w_min, qm);
  s.d = f32_to_fp16(d);
  s.dmin = f32_to_fp16(dmin);
  // Re-round the levels against the fp16 super-scales actually stored.
  round_to_grid(kNSub, 0, 63, scales, fp16_to_f32(s.d), 0.0f, qs);
  round_to_grid(kNSub, 0, 63, mins, fp16_to_f32(s.dmin), 0.0f, qm);
  uint8_t ls[kNSub], lm[kNSub];
  for (int j = 0; j < kNSub; ++j) {
    ls[j] = uint8_t(qs[j]);
    lm[j] = uint8_t(qm[j]);
  }
  set_scales_mins(ls, lm, s.scales);
  requantize(x, nmax, s, L);
}

void dequantize(const ScaleMin& s, const uint8_t* L, float* y) {
  const float d = fp16_to_f32(s.d);
  const float dmin = fp16_to_f32(s.dmin);
  for (int j = 0; j < kNSub; ++j) {
    uint8_t sc, mn;
    get_scale_min(j, s.scales, &sc, &mn);
    const float d1 = d * sc, m1 = dmin * mn;
    for (int l = 0; l < kSub; ++l) y[kSub * j + l] = d1 * L[kSub * j + l] - m1;
  }
}

void grid(const ScaleMin& s, float* scale, float* offset) {
  const float d = fp16_to_f32(s.d);
  const float dmin = fp16_to_f32(s.dmin);
  for (int j = 0; j < kNSub; ++j) {
    uint8_t sc, mn;
    get_scale_min(j, s.scales, &sc, &mn);
    std::fill(scale + kSub * j, scale + kSub * (j + 1), d * sc);
    std::fill(offset + kSub * j, offset + kSub * (j + 1), -(dmin * mn));
  }
}

}  // namespace tinfer::quant_ref::q45k

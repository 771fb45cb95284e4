// The importance-weighted scale searches (see weighted_search.h).
#include "quant/weighted_search.h"

#include <algorithm>
#include <cmath>

namespace tinfer::quant_ref {

namespace {

constexpr float kNegligible = 1e-15f;  // |x| below this everywhere: the group is zero

int round_clamp(double v, int lo, int hi) {
  const double r = std::nearbyint(v);  // ties to even (the default rounding mode)
  return r < lo ? lo : r > hi ? hi : int(r);
}

// Least-squares d for fixed L (x ≈ d L): d = sum w x L / sum w L^2; returns the weighted error
// sum w x^2 - (sum w x L)^2 / sum w L^2 (or sum w x^2 when L is all zero).
double fit_scale(int n, const float* x, const float* w, const int32_t* L, double* d) {
  double sxl = 0, sll = 0, sxx = 0;
  for (int i = 0; i < n; ++i) {
    sxl += double(w[i]) * x[i] * L[i];
    sll += double(w[i]) * L[i] * L[i];
    sxx += double(w[i]) * x[i] * x[i];
  }
  *d = sll > 0 ? sxl / sll : 0.0;
  return sll > 0 ? sxx - sxl * sxl / sll : sxx;
}

// Weighted least squares for x ≈ d L + off with L fixed; with `nonpositive` an offset > 0 becomes 0 and
// d is refitted alone. Returns the weighted error (infinity when d would be negative: codes are
// ordered like x, so a negative d is a degenerate fit the caller must not keep).
double fit_affine(int n, const float* x, const float* w, const int32_t* L, bool nonpositive, double* d, double* off) {
  double sw = 0, sl = 0, sll = 0, sx = 0, sxl = 0;
  for (int i = 0; i < n; ++i) {
    sw += w[i];
    sl += double(w[i]) * L[i];
    sll += double(w[i]) * L[i] * L[i];
    sx += double(w[i]) * x[i];
    sxl += double(w[i]) * x[i] * L[i];
  }
  const double det = sw * sll - sl * sl;
  if (!(det > 0)) return INFINITY;
  *d = (sw * sxl - sx * sl) / det;
  *off = (sll * sx - sl * sxl) / det;
  if (nonpositive && *off > 0) {
    *off = 0;
    *d = sll > 0 ? sxl / sll : 0.0;
  }
  if (*d < 0) return INFINITY;
  double err = 0;
  for (int i = 0; i < n; ++i) {
    const double e = *d * L[i] + *off - x[i];
    err += w[i] * e * e;
  }
  return err;
}

}  // namespace

void round_to_grid(int n, int qmin, int qmax, const float* x, float d, float offset, int32_t* L) {
  for (int i = 0; i < n; ++i)
    L[i] = d != 0.0f ? round_clamp((double(x[i]) - offset) / d, qmin, qmax) : std::clamp(0, qmin, qmax);
}

float weighted_scale_fit(int n, int qmin, int qmax, const float* x, const float* w, int32_t* L) {
  float max = 0, amax = 0;  // the value of largest magnitude, with its sign
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < kNegligible) {
    round_to_grid(n, qmin, qmax, x, 0.0f, 0.0f, L);
    return 0.0f;
  }
  int32_t cand[256];  // n <= 256
  double best_err = INFINITY, best_d = 0;
  // The largest value lands on (or within a code of) each end of the range in turn: ends of unequal
  // length (Q4_0's -8..7) make the sign of d matter.
  for (int end : {qmin, qmax}) {
    if (end == 0) continue;
    for (int is = -10; is <= 10; ++is) {
      const double iscale = (end + (end > 0 ? 0.1 : -0.1) * is) / max;
      for (int i = 0; i < n; ++i) cand[i] = round_clamp(iscale * x[i], qmin, qmax);
      double d;
      const double err = fit_scale(n, x, w, cand, &d);
      if (err < best_err) {
        best_err = err;
        best_d = d;
        std::copy(cand, cand + n, L);
      }
    }
  }
  // Alternate: round to the fitted scale, refit, while the error drops.
  for (int iter = 0; iter < 4 && best_d != 0; ++iter) {
    for (int i = 0; i < n; ++i) cand[i] = round_clamp(x[i] / best_d, qmin, qmax);
    double d;
    const double err = fit_scale(n, x, w, cand, &d);
    if (!(err < best_err)) break;
    best_err = err;
    best_d = d;
    std::copy(cand, cand + n, L);
  }
  return float(best_d);
}

float weighted_affine_fit(int n, int nmax, const float* x, const float* w, int32_t* L, float* offset,
                          bool nonpositive_offset) {
  float min = x[0], max = x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
  }
  if (nonpositive_offset && min > 0) min = 0;
  if (!(max - min > kNegligible)) {  // constant group: the offset carries it
    for (int i = 0; i < n; ++i) L[i] = 0;
    *offset = min;
    return 0.0f;
  }
  int32_t cand[256];  // n <= 256
  // The range-filling grid first, then scales around it, each refitted by least squares.
  double best_d = (double(max) - min) / nmax, best_off = min;
  for (int i = 0; i < n; ++i) L[i] = round_clamp((double(x[i]) - min) / best_d, 0, nmax);
  double best_err = 0;
  for (int i = 0; i < n; ++i) {
    const double e = best_d * L[i] + best_off - x[i];
    best_err += w[i] * e * e;
  }
  for (int is = 0; is <= 40; ++is) {
    const double iscale = (nmax - 1.0 + 0.05 * is) / (double(max) - min);
    for (int i = 0; i < n; ++i) cand[i] = round_clamp(iscale * (double(x[i]) - min), 0, nmax);
    double d, off;
    const double err = fit_affine(n, x, w, cand, nonpositive_offset, &d, &off);
    if (err < best_err) {
      best_err = err;
      best_d = d;
      best_off = off;
      std::copy(cand, cand + n, L);
    }
  }
  for (int iter = 0; iter < 4 && best_d > 0; ++iter) {
    for (int i = 0; i < n; ++i) cand[i] = round_clamp((double(x[i]) - best_off) / best_d, 0, nmax);
    double d, off;
    const double err = fit_affine(n, x, w, cand, nonpositive_offset, &d, &off);
    if (!(err < best_err)) break;
    best_err = err;
    best_d = d;
    best_off = off;
    std::copy(cand, cand + n, L);
  }
  *offset = float(best_off);
  return float(best_d);
}

void weighted_sub_block_fits(int n_sub, int sub, int nmax, const float* x, const float* w, uint8_t* L, float* scales,
                             float* mins, float* w_scale, float* w_min) {
  int32_t Lj[32];  // sub <= 32 (Q2_K: 16, Q4_K / Q5_K: 32)
  for (int j = 0; j < n_sub; ++j) {
    const float* xs = x + sub * j;
    const float* ws = w + sub * j;
    float offset;
    scales[j] = weighted_affine_fit(sub, nmax, xs, ws, Lj, &offset, true);
    mins[j] = -offset;
    double wl2 = 0, wsum = 0;
    for (int i = 0; i < sub; ++i) {
      L[sub * j + i] = uint8_t(Lj[i]);
      wl2 += double(ws[i]) * Lj[i] * Lj[i];
      wsum += ws[i];
    }
    w_scale[j] = float(wl2);
    w_min[j] = float(wsum);
  }
}

void weighted_sub_block_scale_fits(int n_sub, int sub, int qmin, int qmax, const float* x, const float* w, int32_t* L,
                                   float* scales, float* w_scale) {
  for (int j = 0; j < n_sub; ++j) {
    const float* ws = w + sub * j;
    int32_t* Lj = L + sub * j;
    scales[j] = weighted_scale_fit(sub, qmin, qmax, x + sub * j, ws, Lj);
    double wl2 = 0;
    for (int i = 0; i < sub; ++i) wl2 += double(ws[i]) * Lj[i] * Lj[i];
    w_scale[j] = float(wl2);
  }
}

}  // namespace tinfer::quant_ref

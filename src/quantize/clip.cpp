// Clip search: per row and type block, the clip ratio r (the block's weights clamped to +-r max|w|) whose
// grid minimises the block's output error on the calibration inputs, e^T H_b e with e = w - Q_r(w) (the
// unclamped weights snapped onto the grid fitted to the clamped ones) and H_b the block's diagonal sub-blocks
// of at most 32 columns of X^T X. r = 1 (no clip) is always a candidate, so the error never rises.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "quantize/grid_quant.h"

namespace tinfer {
namespace quantize_detail {

double block_output_error(const float* e, int64_t n, const double* h, int64_t ld) {
  double total = 0;
  for (int64_t s0 = 0; s0 < n; s0 += kClipSubBlock) {
    const int64_t s1 = std::min(n, s0 + kClipSubBlock);
    for (int64_t i = s0; i < s1; ++i) {
      const double* hi = h + i * ld;
      double acc = 0;
      for (int64_t j = s0; j < s1; ++j) acc += hi[j] * double(e[j]);
      total += double(e[i]) * acc;
    }
  }
  return total;
}

static double block_compensated_error(const float* e, int64_t n, const float* u, int64_t ld, std::vector<double>& y) {
  // Solve U_b^T y = e (U_b^T lower triangular) by forward substitution; the error is |y|^2.
  y.resize(size_t(n));
  double total = 0;
  for (int64_t j = 0; j < n; ++j) {
    double acc = e[j];
    for (int64_t k = 0; k < j; ++k) acc -= double(u[k * ld + j]) * y[k];
    y[j] = acc / double(u[j * ld + j]);
    total += y[j] * y[j];
  }
  return total;
}

double block_compensated_error(const float* e, int64_t n, const float* u, int64_t ld) {
  std::vector<double> y;
  return block_compensated_error(e, n, u, ld, y);
}

double fit_block_clipped(const TypeTraits& tt, const float* w, int64_t n, const float* importance,
                         const BlockMetric& metric, const ClipOptions& opts, void* dst, ClipScratch& s,
                         double* err_unclipped) {
  s.clamped.resize(size_t(n)), s.e.resize(size_t(n)), s.scale.resize(size_t(n)), s.offset.resize(size_t(n));
  s.codes.resize(size_t(n)), s.best.resize(size_t(n / tt.block_size) * tt.block_bytes), s.trial.resize(s.best.size());
  float wmax = 0;
  for (int64_t i = 0; i < n; ++i) wmax = std::max(wmax, std::fabs(w[i]));
  double best = INFINITY, best_r = 1;
  const int n_grid = std::max(1, opts.n_grid);
  for (int k = 0; k < n_grid; ++k) {
    const double r = n_grid == 1 ? 1.0 : 1.0 - opts.max_shrink * double(k) / double(n_grid - 1);
    const float lim = float(r * wmax);
    for (int64_t i = 0; i < n; ++i) s.clamped[i] = std::clamp(w[i], -lim, lim);
    if (importance)
      tt.from_float_weighted(s.clamped.data(), s.trial.data(), n, importance);
    else
      tt.from_float(s.clamped.data(), s.trial.data(), n);
    tt.grid(s.trial.data(), s.scale.data(), s.offset.data(), n);
    tt.get_codes(s.trial.data(), s.codes.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      s.codes[i] = snap_code(w[i], s.scale[i], s.offset[i], s.codes[i], tt.code_min, tt.code_max);
      s.e[i] = w[i] - (s.scale[i] * float(s.codes[i]) + s.offset[i]);
    }
    const double err = metric.u ? block_compensated_error(s.e.data(), n, metric.u, metric.ld, s.y)
                                : block_output_error(s.e.data(), n, metric.h, metric.ld);
    if (k == 0 && err_unclipped) *err_unclipped = err;
    if (err < best) {
      best = err, best_r = r;
      tt.set_codes(s.trial.data(), s.codes.data(), n);
      s.best.swap(s.trial);
    }
  }
  std::memcpy(dst, s.best.data(), s.best.size());
  s.ratio = best_r;
  return best;
}

}  // namespace quantize_detail

std::vector<uint8_t> quantize_rtn_clipped(DType type, const float* w, int64_t rows, int64_t cols, const InputStats& x,
                                          const float* importance, const ClipOptions& opts, ClipReport* report) {
  using namespace quantize_detail;
  const TypeTraits& tt = type_traits(type);
  check(x.cols == cols && int64_t(x.xtx.size()) == cols * cols, "quantize_rtn_clipped: statistics of " +
                                                                    std::to_string(x.cols) + " inputs for " +
                                                                    std::to_string(cols) + " columns");
  check(opts.n_grid >= 1 && opts.max_shrink >= 0 && opts.max_shrink < 1, "quantize_rtn_clipped: bad options");
  ThreadPool pool(opts.threads);
  if (is_float_type(type)) return rtn(tt, w, rows, cols, nullptr, pool);
  check(tt.grid && tt.get_codes && tt.set_codes && (!importance || tt.from_float_weighted),
        std::string("quantize_rtn_clipped: type ") + tt.name + " has no code grid");
  const int64_t B = tt.block_size;
  check(cols % B == 0, "quantize_rtn_clipped: a row of " + std::to_string(cols) + " is not a whole number of " +
                           tt.name + " blocks");
  const int64_t nb = cols / B;
  const size_t rb = size_t(nb) * tt.block_bytes;
  std::vector<uint8_t> out(rb * size_t(rows));
  std::vector<double> err0(static_cast<size_t>(rows)), err1(static_cast<size_t>(rows));
  std::vector<int64_t> clipped(static_cast<size_t>(rows));
  pool.parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    ClipScratch s;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t b = 0; b < nb; ++b) {
        const int64_t c0 = b * B;
        double e_plain = 0;
        err1[r] += fit_block_clipped(tt, w + r * cols + c0, B, importance ? importance + c0 : nullptr,
                                     BlockMetric{.h = &x.xtx[size_t(c0 * cols + c0)], .ld = cols}, opts,
                                     out.data() + rb * size_t(r) + size_t(b) * tt.block_bytes, s, &e_plain);
        err0[r] += e_plain;
        clipped[r] += s.ratio < 1;
      }
  });
  if (report) {
    *report = ClipReport{};
    report->blocks = rows * nb;
    for (int64_t r = 0; r < rows; ++r)
      report->clipped += clipped[r], report->err_plain += err0[r], report->err_clipped += err1[r];
  }
  return out;
}

}  // namespace tinfer

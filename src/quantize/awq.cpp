// AWQ: activation-aware per-channel scales. Per group: s(alpha) = mean|x|^alpha normalised, the group's
// stacked matrices quantized as W diag(s) and read back as Q(W diag(s)) diag(s)^-1; the loss is the output
// error on the calibration sample, || X (W - W_hat)^T ||^2, relative to || X W^T ||^2; with act_quant the
// runtime's: || X W^T - Qa(X diag(s)^-1) Q(W diag(s))^T ||^2, Qa the int8 activation rounding per 32-block.
#include <algorithm>
#include <cmath>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "quant/type_table.h"
#include "quantize/grid_quant.h"
#include "quantize/scale_fold.h"

namespace tinfer {

using namespace quantize_detail;

namespace {

constexpr int64_t kActBlock = 32;  // the CPU kernels' int8 activation block

}  // namespace

std::vector<ScaleFold> awq_apply(FloatModel& m, CalibStats& stats, DType target, const ScaleSearchOptions& opts) {
  check(opts.n_grid >= 2, "awq: the alpha grid needs at least 2 points");
  ThreadPool pool(opts.threads);
  std::vector<ScaleFold> report;
  for (const FoldGroup& g : fold_groups(m, stats)) {
    // The group is searched with the type its matrices will be written in (the recipe's plan).
    const DType type = opts.type_of && !g.consumers.empty() ? opts.type_of(g.consumers.front()) : target;
    const TypeTraits& tt = type_traits(type);
    ScaleFold f;
    f.group = g.label;
    const int64_t cols = g.stats->cols;
    if (g.skip.empty() && (!tt.grid || tt.code_max == 0))
      f.note = std::string("its matrices stay ") + tt.name + " (not a quantized type)";
    else if (g.skip.empty() && cols % tt.block_size != 0)
      f.note = "rows of " + std::to_string(cols) + " are not a whole number of " + tt.name + " blocks";
    else
      f.note = g.skip;
    if (!f.note.empty()) {
      report.push_back(f);
      continue;
    }
    if (opts.weighted)
      check(tt.from_float_weighted && tt.grid, std::string("awq: type ") + tt.name + " has no importance-weighted quantizer");
    const bool act_quant = opts.act_quant && cols % kActBlock == 0;
    const bool split = opts.held_out && g.stats->sample_rows >= 2 * kMinHeldOutRows;
    const FoldProblem p = fold_problem(m, g, opts.max_sample_rows, pool, split ? SampleRows::fit : SampleRows::all);
    const FoldProblem held = split ? fold_problem(m, g, opts.max_sample_rows, pool, SampleRows::held_out) : FoldProblem{};
    const int64_t rows = p.rows;
    const std::vector<float>& w = p.w;
    std::vector<float> y_fit(p.y_ref.size()), y_held(held.y_ref.size());  // act_quant_error sizes by y
    std::vector<float> xs;
    if (act_quant) xs.resize(std::max(p.x.size(), held.x.size()));

    const InputStats& st = *g.stats;
    std::vector<double> mean_abs(static_cast<size_t>(cols));
    double top = 0;
    for (int64_t c = 0; c < cols; ++c) top = std::max(top, mean_abs[c] = st.sum_abs[c] / double(st.n_tokens));
    for (double& v : mean_abs) v = std::max(v, 1e-6 * top + 1e-30);
    std::vector<float> imp;
    if (opts.weighted) imp = activation_importance(st);

    std::vector<float> ws(w.size()), e(w.size()), deq(w.size()), imp_s(imp.size());
    std::vector<double> s(static_cast<size_t>(cols)), best_s;
    // W diag(s) quantized for s = mean|x|^alpha (left in s), as the tool will write it.
    auto quantize_scaled = [&](double alpha) {
      double smax = 0, smin = INFINITY;
      for (int64_t c = 0; c < cols; ++c) {
        s[c] = std::pow(mean_abs[c], alpha);
        smax = std::max(smax, s[c]), smin = std::min(smin, s[c]);
      }
      const double norm = std::sqrt(smax * smin);
      for (double& v : s) v /= norm;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) ws[r * cols + c] = float(w[r * cols + c] * s[c]);
      for (size_t c = 0; c < imp.size(); ++c) imp_s[c] = float(imp[c] / (s[c] * s[c]));  // energy of x / s
      return rtn(tt, ws.data(), rows, cols, opts.weighted ? imp_s.data() : nullptr, pool);
    };
    // The relative output error of codes q (for the scales in s) on the sample rows of `on`.
    auto error_on = [&](const FoldProblem& on, const std::vector<uint8_t>& q) {
      std::vector<float>& y = &on == &p ? y_fit : y_held;
      // with act_quant the runtime's product: int8 (x / s) times the dequantized W diag(s)
      if (act_quant) return act_quant_error(on, tt, q.data(), s, kActBlock, deq, xs, y, pool) / on.ref;
      const size_t rb = row_bytes(type, cols);
      pool.parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          tt.to_float(q.data() + rb * size_t(r), &deq[r * cols], cols);
          for (int64_t c = 0; c < cols; ++c) e[r * cols + c] = float(w[r * cols + c] - deq[r * cols + c] / s[c]);
        }
      });
      float_gemm(e.data(), rows, cols, on.x.data(), on.n, y.data(), pool);
      double err = 0;
      for (size_t k = 0; k < size_t(on.n * rows); ++k) err += double(y[k]) * y[k];
      return err / on.ref;
    };
    double best = INFINITY;
    for (int k = 0; k < opts.n_grid; ++k) {
      const double alpha = double(k) / double(opts.n_grid - 1);
      const std::vector<uint8_t> q = quantize_scaled(alpha);
      const double err = error_on(p, q);
      if (k == 0) {
        f.err_plain = err;
        if (split) f.err_held_plain = error_on(held, q);
      }
      if (err < best) best = err, f.alpha = alpha, best_s = s;
    }
    f.err_scaled = best;
    if (split && f.alpha > 0) {
      f.err_held_scaled = error_on(held, quantize_scaled(f.alpha));
      if (f.err_held_scaled >= f.err_held_plain) {
        // The fit half's alpha does not carry over to the held-out half: no scales (imatrix-RTN, or plain RTN).
        f.note = "alpha " + std::to_string(f.alpha).substr(0, 4) + " lost on the held-out rows";
        f.alpha = 0, f.err_scaled = f.err_plain, f.err_held_scaled = f.err_held_plain;
        report.push_back(f);
        continue;
      }
    } else if (split) {
      f.err_held_scaled = f.err_held_plain;
    }
    fold_winner(m, g, f.alpha > 0 ? best_s : std::vector<double>{}, f);  // alpha 0 = no scales
    report.push_back(f);
  }
  return report;
}

}  // namespace tinfer

// AWQ: activation-aware per-channel scales. Per group: s(alpha) = mean|x|^alpha normalised, the group's
// stacked matrices quantized as W diag(s) and read back as Q(W diag(s)) diag(s)^-1; the loss is the output
// error on the calibration sample, || X (W - W_hat)^T ||^2, relative to || X W^T ||^2; with act_quant the
// runtime's: || X W^T - Qa(X diag(s)^-1) Q(W diag(s))^T ||^2, Qa the int8 activation rounding per 32-block.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "quant/type_table.h"
#include "quantize/grid_quant.h"
#include "quantize/scale_fold.h"

namespace tinfer {

using namespace quantize_detail;

namespace {

constexpr int64_t kActBlock = 32;  // the CPU kernels' int8 activation block

// Why a group cannot be searched with `tt` ("" if it can).
std::string skip_note(const FoldGroup& g, const TypeTraits& tt) {
  const int64_t cols = g.stats->cols;
  if (!g.skip.empty()) return g.skip;
  if (!tt.grid || tt.code_max == 0) return std::string("its matrices stay ") + tt.name + " (not a quantized type)";
  if (cols % tt.block_size != 0)
    return "rows of " + std::to_string(cols) + " are not a whole number of " + tt.name + " blocks";
  return "";
}

// One group's search: the scales s(alpha), the codes of W diag(s) and their output error on a sample. The fit
// sample p (and, with the held-out check, the held-out one) and the scratch are made once per group.
class GroupSearch {
 public:
  GroupSearch(const FloatModel& m, const FoldGroup& g, const TypeTraits& tt, const ScaleSearchOptions& opts,
              ThreadPool& pool)
      : tt_(tt), opts_(opts), pool_(pool), cols_(g.stats->cols),
        act_quant_(opts.act_quant && cols_ % kActBlock == 0),
        split_(opts.held_out && g.stats->sample_rows >= 2 * kMinHeldOutRows),
        fit_(fold_problem(m, g, opts.max_sample_rows, pool, split_ ? SampleRows::fit : SampleRows::all)),
        held_(split_ ? fold_problem(m, g, opts.max_sample_rows, pool, SampleRows::held_out) : FoldProblem{}),
        y_fit_(fit_.y_ref.size()), y_held_(held_.y_ref.size()), ws_(fit_.w.size()), e_(fit_.w.size()),
        deq_(fit_.w.size()), s_(static_cast<size_t>(cols_)) {
    if (act_quant_) xs_.resize(std::max(fit_.x.size(), held_.x.size()));
    const InputStats& st = *g.stats;
    mean_abs_.resize(static_cast<size_t>(cols_));
    double top = 0;
    for (int64_t c = 0; c < cols_; ++c) top = std::max(top, mean_abs_[c] = st.sum_abs[c] / double(st.n_tokens));
    for (double& v : mean_abs_) v = std::max(v, 1e-6 * top + 1e-30);
    if (opts.weighted) imp_ = activation_importance(st), imp_s_.resize(imp_.size());
  }

  bool split() const { return split_; }
  const FoldProblem& fit() const { return fit_; }
  const FoldProblem& held() const { return held_; }
  const std::vector<double>& scales() const { return s_; }

  // W diag(s) quantized for s = mean|x|^alpha (left in scales()), as the tool will write it.
  std::vector<uint8_t> quantize_scaled(double alpha) {
    double smax = 0, smin = INFINITY;
    for (int64_t c = 0; c < cols_; ++c) {
      s_[c] = std::pow(mean_abs_[c], alpha);
      smax = std::max(smax, s_[c]), smin = std::min(smin, s_[c]);
    }
    const double norm = std::sqrt(smax * smin);
    for (double& v : s_) v /= norm;
    const std::vector<float>& w = fit_.w;
    for (int64_t r = 0; r < fit_.rows; ++r)
      for (int64_t c = 0; c < cols_; ++c) ws_[r * cols_ + c] = float(w[r * cols_ + c] * s_[c]);
    for (size_t c = 0; c < imp_.size(); ++c) imp_s_[c] = float(imp_[c] / (s_[c] * s_[c]));  // energy of x / s
    return rtn(tt_, ws_.data(), fit_.rows, cols_, opts_.weighted ? imp_s_.data() : nullptr, pool_);
  }

  // The relative output error of codes q (for the scales in scales()) on the sample rows of `on` (fit or held).
  double error_on(const FoldProblem& on, const std::vector<uint8_t>& q) {
    std::vector<float>& y = &on == &fit_ ? y_fit_ : y_held_;  // act_quant_error sizes by y
    // with act_quant the runtime's product: int8 (x / s) times the dequantized W diag(s)
    if (act_quant_) return act_quant_error(on, tt_, q.data(), s_, kActBlock, deq_, xs_, y, pool_) / on.ref;
    const size_t rb = row_bytes(tt_.type, cols_);
    const std::vector<float>& w = fit_.w;
    pool_.parallel_for(fit_.rows, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        tt_.to_float(q.data() + rb * size_t(r), &deq_[r * cols_], cols_);
        for (int64_t c = 0; c < cols_; ++c) e_[r * cols_ + c] = float(w[r * cols_ + c] - deq_[r * cols_ + c] / s_[c]);
      }
    });
    float_gemm(e_.data(), fit_.rows, cols_, on.x.data(), on.n, y.data(), pool_);
    double err = 0;
    for (size_t k = 0; k < size_t(on.n * fit_.rows); ++k) err += double(y[k]) * y[k];
    return err / on.ref;
  }

 private:
  const TypeTraits& tt_;
  const ScaleSearchOptions& opts_;
  ThreadPool& pool_;
  const int64_t cols_;
  const bool act_quant_, split_;
  const FoldProblem fit_, held_;
  std::vector<float> y_fit_, y_held_, xs_, ws_, e_, deq_, imp_, imp_s_;
  std::vector<double> mean_abs_, s_;
};

// The grid search on the fit rows (f: alpha, err_plain, err_scaled, and the held-out errors at alpha 0);
// returns the best alpha's scales.
std::vector<double> search_alpha(GroupSearch& gs, int n_grid, ScaleFold& f) {
  double best = INFINITY;
  std::vector<double> best_s;
  for (int k = 0; k < n_grid; ++k) {
    const double alpha = double(k) / double(n_grid - 1);
    const std::vector<uint8_t> q = gs.quantize_scaled(alpha);
    const double err = gs.error_on(gs.fit(), q);
    if (k == 0) {
      f.err_plain = err;
      if (gs.split()) f.err_held_plain = gs.error_on(gs.held(), q);
    }
    if (err < best) best = err, f.alpha = alpha, best_s = gs.scales();
  }
  f.err_scaled = best;
  return best_s;
}

// With the held-out check: the fitted alpha's error on the held-out rows; false (f reset to no scales, with a
// note) when it does not beat no scales there.
bool holds_out(GroupSearch& gs, ScaleFold& f) {
  if (!gs.split()) return true;
  if (f.alpha == 0) {
    f.err_held_scaled = f.err_held_plain;
    return true;
  }
  f.err_held_scaled = gs.error_on(gs.held(), gs.quantize_scaled(f.alpha));
  if (f.err_held_scaled < f.err_held_plain) return true;
  // The fit half's alpha does not carry over to the held-out half: no scales (imatrix-RTN, or plain RTN).
  f.note = "alpha " + std::to_string(f.alpha).substr(0, 4) + " lost on the held-out rows";
  f.alpha = 0, f.err_scaled = f.err_plain, f.err_held_scaled = f.err_held_plain;
  return false;
}

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
    f.note = skip_note(g, tt);
    if (f.note.empty()) {
      if (opts.weighted)
        check(tt.from_float_weighted && tt.grid,
              std::string("awq: type ") + tt.name + " has no importance-weighted quantizer");
      GroupSearch gs(m, g, tt, opts, pool);
      const std::vector<double> best_s = search_alpha(gs, opts.n_grid, f);
      if (holds_out(gs, f)) fold_winner(m, g, f.alpha > 0 ? best_s : std::vector<double>{}, f);  // alpha 0: none
    }
    report.push_back(f);
  }
  return report;
}

}  // namespace tinfer

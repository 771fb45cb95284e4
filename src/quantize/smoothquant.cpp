// SmoothQuant: activation outliers migrated into the weights for W8A8. Per group: s(alpha) =
// max|x|^alpha / max|w|^(1-alpha); the loss is the output error of the runtime's arithmetic, dynamic int8
// activations (per 32-block as the CPU kernels quantize them, or per token) times the quantized weights,
// against the float layer, relative to || X W^T ||^2.
#include <algorithm>
#include <cmath>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "quant/type_table.h"
#include "quantize/grid_quant.h"
#include "quantize/scale_fold.h"

namespace tinfer {

using namespace quantize_detail;


std::vector<ScaleFold> smoothquant_apply(FloatModel& m, CalibStats& stats, DType type, const ScaleSearchOptions& opts) {
  const TypeTraits& tt = type_traits(type);
  check(opts.n_grid >= 2, "smoothquant: the alpha grid needs at least 2 points");
  ThreadPool pool(opts.threads);
  const int64_t act_block = 32;
  std::vector<ScaleFold> report;
  for (const FoldGroup& g : fold_groups(m, stats)) {
    const int64_t cols = g.stats->cols;
    ScaleFold f;
    f.group = g.label;
    f.note = g.skip;
    if (f.note.empty() && cols % tt.block_size != 0)
      f.note = "rows of " + std::to_string(cols) + " are not a whole number of " + tt.name + " blocks";
    if (f.note.empty() && !opts.per_token && cols % act_block != 0)
      f.note = "rows of " + std::to_string(cols) + " are not a whole number of 32-blocks of int8 activations";
    if (!f.note.empty()) {
      report.push_back(f);
      continue;
    }
    const FoldProblem p = fold_problem(m, g, opts.max_sample_rows, pool);
    const int64_t rows = p.rows;
    const std::vector<float>& w = p.w;
    std::vector<float> y(p.y_ref.size());

    std::vector<double> max_w(static_cast<size_t>(cols), 0.0), max_x(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) max_w[c] = std::max(max_w[c], double(std::fabs(w[r * cols + c])));
    for (int64_t c = 0; c < cols; ++c) max_x[c] = std::max(double(g.stats->max_abs[c]), 1e-5);
    for (double& v : max_w) v = std::max(v, 1e-5);

    std::vector<float> ws(w.size()), deq(w.size()), xs(p.x.size());
    std::vector<double> s(static_cast<size_t>(cols)), best_s;
    auto loss = [&](const std::vector<double>& sc) {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) ws[r * cols + c] = float(w[r * cols + c] * sc[c]);
      const std::vector<uint8_t> q = rtn(tt, ws.data(), rows, cols, nullptr, pool);
      return act_quant_error(p, tt, q.data(), sc, opts.per_token ? cols : act_block, deq, xs, y, pool) / p.ref;
    };
    std::fill(s.begin(), s.end(), 1.0);
    f.err_plain = loss(s);
    double best = f.err_plain;
    for (int k = 0; k < opts.n_grid; ++k) {
      const double alpha = double(k) / double(opts.n_grid - 1);
      for (int64_t c = 0; c < cols; ++c) s[c] = std::pow(max_x[c], alpha) / std::pow(max_w[c], 1 - alpha);
      const double err = loss(s);
      if (err < best) best = err, f.alpha = alpha, best_s = s;
    }
    f.err_scaled = best;
    fold_winner(m, g, best_s, f);
    report.push_back(f);
  }
  return report;
}

}  // namespace tinfer

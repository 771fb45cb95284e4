// Fold groups and the exact fold shared by AWQ and SmoothQuant.
#include "quantize/scale_fold.h"

#include <algorithm>
#include <cmath>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace tinfer::quantize_detail {

namespace {

std::shared_ptr<InputStats> stats_for(const CalibStats& stats, const std::string& name) {
  auto it = stats.find(name);
  check(it != stats.end() && it->second, "scale search: no calibration statistics for '" + name + "'");
  return it->second;
}

const FloatTensor& tensor(const FloatModel& m, const std::string& name) {
  auto it = m.tensors.find(name);
  check(it != m.tensors.end(), "scale search: the model has no tensor '" + name + "'");
  return it->second;
}

}  // namespace

std::vector<FoldGroup> fold_groups(const FloatModel& m, const CalibStats& stats) {
  const ModelConfig& c = m.config;
  std::vector<FoldGroup> groups;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l);
    auto t = [&](const char* what) { return layer_tensor(l, what); };
    groups.push_back({b + " attn_norm -> q,k,v", t("attn_norm"), {t("attn_q"), t("attn_k"), t("attn_v")},
                      stats_for(stats, t("attn_q")), ""});
    FoldGroup vo{b + " v -> o", t("attn_v"), {t("attn_output")}, stats_for(stats, t("attn_output")), ""};
    if (c.n_kv_heads != c.n_heads)
      vo.skip = "grouped-query attention (" + std::to_string(c.n_kv_heads) + " kv heads for " +
                std::to_string(c.n_heads) + " heads): v's rows are shared by several heads' columns of o";
    groups.push_back(vo);
    groups.push_back({b + " ffn_norm -> gate,up", t("ffn_norm"), {t("ffn_gate"), t("ffn_up")},
                      stats_for(stats, t("ffn_gate")), ""});
    groups.push_back({b + " up -> down", t("ffn_up"), {t("ffn_down")}, stats_for(stats, t("ffn_down")), ""});
  }
  for (FoldGroup& g : groups) {
    if (!g.skip.empty()) continue;
    const FloatTensor& prev = tensor(m, g.prev);
    const int64_t width = prev.shape.size() == 1 ? prev.cols() : prev.rows();
    for (const std::string& name : g.consumers) {
      const FloatTensor& w = tensor(m, name);
      check(w.shape.size() == 2 && w.cols() == width && w.cols() == g.stats->cols,
            "scale search: '" + name + "' does not read the " + std::to_string(width) + " outputs of '" + g.prev + "'");
    }
  }
  return groups;
}

void apply_fold(FloatModel& m, const FoldGroup& g, const std::vector<double>& s) {
  InputStats& x = *g.stats;
  const int64_t n = x.cols;
  check(int64_t(s.size()) == n, "apply_fold: wrong number of scales");
  FloatTensor& prev = m.tensors.at(g.prev);
  if (prev.shape.size() == 1) {
    for (int64_t c = 0; c < n; ++c) prev.data[c] = float(prev.data[c] / s[c]);
  } else {  // the matrix's output c feeds input channel c
    const int64_t cols = prev.cols();
    for (int64_t c = 0; c < n; ++c)
      for (int64_t k = 0; k < cols; ++k) prev.data[c * cols + k] = float(prev.data[c * cols + k] / s[c]);
  }
  for (const std::string& name : g.consumers) {
    FloatTensor& w = m.tensors.at(name);
    for (int64_t r = 0; r < w.rows(); ++r)
      for (int64_t c = 0; c < n; ++c) w.data[r * n + c] = float(w.data[r * n + c] * s[c]);
  }
  for (int64_t c = 0; c < n; ++c) {
    x.sum_abs[c] /= s[c];
    x.sum_sq[c] /= s[c] * s[c];
    x.max_abs[c] = float(x.max_abs[c] / s[c]);
  }
  for (int64_t r = 0; r < x.sample_rows; ++r)
    for (int64_t c = 0; c < n; ++c) x.sample[r * n + c] = float(x.sample[r * n + c] / s[c]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) x.xtx[i * n + j] /= s[i] * s[j];
}

std::vector<float> stacked_weights(const FloatModel& m, const FoldGroup& g, int64_t& rows) {
  std::vector<float> w;
  rows = 0;
  for (const std::string& name : g.consumers) {
    const FloatTensor& t = m.tensors.at(name);
    w.insert(w.end(), t.data.begin(), t.data.end());
    rows += t.rows();
  }
  return w;
}

void float_gemm(const float* w, int64_t rows, int64_t cols, const float* x, int64_t n, float* y, ThreadPool& pool) {
  const PackedMatrix p = pack_matrix(DType::F32, w, rows, cols);
  matmul(p, x, n, y, pool);
}

std::vector<float> loss_sample(const InputStats& s, int64_t first, int64_t end, int64_t max_rows, int64_t& n) {
  check(s.sample_rows > 0, "scale search: the calibration statistics keep no sample rows");
  check(0 <= first && first < end && end <= s.sample_rows, "scale search: an empty or out-of-range sample");
  const int64_t kept = end - first;
  n = max_rows > 0 ? std::min(max_rows, kept) : kept;
  std::vector<float> x(static_cast<size_t>(n * s.cols));
  for (int64_t k = 0; k < n; ++k) {  // evenly spread over the kept rows
    const int64_t r = first + (2 * k + 1) * kept / (2 * n);
    std::copy(s.sample.begin() + r * s.cols, s.sample.begin() + (r + 1) * s.cols, x.begin() + k * s.cols);
  }
  return x;
}

double sum_squares(const std::vector<float>& y) {
  double e = 0;
  for (float v : y) e += double(v) * v;
  return e;
}

FoldProblem fold_problem(const FloatModel& m, const FoldGroup& g, int64_t max_sample_rows, ThreadPool& pool,
                         SampleRows rows) {
  FoldProblem p;
  p.cols = g.stats->cols;
  p.w = stacked_weights(m, g, p.rows);
  const int64_t kept = g.stats->sample_rows, half = kept / 2;
  const int64_t first = rows == SampleRows::held_out ? half : 0, end = rows == SampleRows::fit ? half : kept;
  p.x = loss_sample(*g.stats, first, end, max_sample_rows, p.n);
  p.y_ref.resize(static_cast<size_t>(p.n * p.rows));
  float_gemm(p.w.data(), p.rows, p.cols, p.x.data(), p.n, p.y_ref.data(), pool);
  p.ref = std::max(sum_squares(p.y_ref), 1e-30);
  return p;
}

double act_quant_error(const FoldProblem& p, const TypeTraits& tt, const uint8_t* q, const std::vector<double>& s,
                       int64_t act_block, std::vector<float>& deq, std::vector<float>& xs, std::vector<float>& y,
                       ThreadPool& pool) {
  const int64_t cols = p.cols;
  const size_t rb = row_bytes(tt.type, cols);
  pool.parallel_for(p.rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) tt.to_float(q + rb * size_t(r), &deq[r * cols], cols);
  });
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t c = 0; c < cols; ++c) xs[i * cols + c] = float(p.x[i * cols + c] / s[c]);
  fake_quant_act(xs.data(), p.n, cols, act_block);
  float_gemm(deq.data(), p.rows, cols, xs.data(), p.n, y.data(), pool);
  double err = 0;
  for (size_t k = 0; k < y.size(); ++k) err += double(y[k] - p.y_ref[k]) * (y[k] - p.y_ref[k]);
  return err;
}

void fold_winner(FloatModel& m, const FoldGroup& g, const std::vector<double>& best, ScaleFold& f) {
  if (best.empty()) {
    f.note = "no alpha beat the unscaled layer";
    return;
  }
  apply_fold(m, g, best);
  f.folded = true;
}

void fake_quant_act(float* x, int64_t n, int64_t cols, int64_t block) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t b0 = 0; b0 < cols; b0 += block) {
      float* v = x + i * cols + b0;
      const int64_t len = std::min(block, cols - b0);
      float amax = 0;
      for (int64_t k = 0; k < len; ++k) amax = std::max(amax, std::fabs(v[k]));
      const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      for (int64_t k = 0; k < len; ++k) v[k] = d * std::nearbyint(v[k] * id);
    }
}

}  // namespace tinfer::quantize_detail

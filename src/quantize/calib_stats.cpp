// Calibration statistics: the float model run by the CPU backend over the calibration tokens, a linear-input
// observer accumulating per shared input X^T X, sum |x|, sum x^2, max |x| and a fixed row subsample.
#include "quantize/calib_stats.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "backend/backend.h"
#include "model/model.h"
#include "formats/gguf.h"
#include "quant/type_table.h"
#include "quantize/float_model.h"
#include "quantize/grid_quant.h"
#include "quantize/simd.h"

namespace tinfer {

namespace {

using quantize_detail::is_float_type;

bool is_layer_matrix(const GgufTensor& t) { return t.shape.size() == 2 && t.name.rfind("blk.", 0) == 0; }

}  // namespace

std::unique_ptr<Model> float_image(const Model& model, bool with_head) {
  auto convert = [&](const GgufTensor& t) {
    const bool matrix = is_layer_matrix(t) || (with_head && t.shape.size() == 2);
    return matrix && !is_float_type(t.type);
  };
  bool quantized = false;
  for (const GgufTensor& t : model.gguf().tensors()) quantized = quantized || convert(t);
  if (!quantized) return nullptr;
  GgufWriter w;
  copy_metadata(model.gguf(), w);
  std::vector<float> buf;
  for (const GgufTensor& t : model.gguf().tensors()) {
    if (!convert(t)) {
      w.add_tensor(t.name, t.type, t.shape, t.data, t.bytes);
      continue;
    }
    buf.resize(size_t(t.elements()));
    type_traits(t.type).to_float(t.data, buf.data(), t.elements());
    w.add_tensor(t.name, DType::F32, t.shape, buf.data(), buf.size() * sizeof(float));
  }
  return Model::from_gguf_bytes(w.to_bytes());
}

namespace {

std::shared_ptr<InputStats> make_stats(int64_t cols, int64_t sample_rows) {
  auto s = std::make_shared<InputStats>();
  s->cols = cols;
  s->xtx.assign(size_t(cols * cols), 0.0);
  s->sum_abs.assign(size_t(cols), 0.0);
  s->sum_sq.assign(size_t(cols), 0.0);
  s->max_abs.assign(size_t(cols), 0.f);
  s->sample.reserve(size_t(sample_rows * cols));
  return s;
}

// Adds x [n][cols] (global token indices first..first+n-1) to `s`. `sampled` lists the sampled global
// token indices, ascending. X^T X: products in float over chunks of at most kChunk tokens (quantize/simd.h),
// accumulated in double; upper triangle only (mirrored at the end).
class Accumulator {
 public:
  Accumulator(ThreadPool& pool, double first_token_weight) : pool_(pool), first_scale_(float(std::sqrt(first_token_weight))) {}

  // window_start: row 0 of x is a window's first token.
  void add(InputStats& s, const float* x, int64_t n, int64_t cols, int64_t first, bool window_start,
           const std::vector<int64_t>& sampled) {
    check(cols == s.cols, "calibration: input width changed");
    for (int64_t i = 0; i < n; ++i) {
      const float* row = x + i * cols;
      for (int64_t c = 0; c < cols; ++c) {
        const double v = row[c];
        s.sum_abs[c] += std::fabs(v);
        s.sum_sq[c] += v * v;
        s.max_abs[c] = std::max(s.max_abs[c], std::fabs(row[c]));
      }
    }
    auto it = std::lower_bound(sampled.begin(), sampled.end(), first);
    for (; it != sampled.end() && *it < first + n; ++it)
      s.sample.insert(s.sample.end(), x + (*it - first) * cols, x + (*it - first + 1) * cols);
    s.sample_rows = int64_t(s.sample.size()) / cols;
    s.n_tokens += n;
    for (int64_t t0 = 0; t0 < n; t0 += kChunk)
      add_xtx(s, x + t0 * cols, std::min(kChunk, n - t0), cols, window_start && t0 == 0);
  }

  static void mirror(InputStats& s) {
    const int64_t c = s.cols;
    for (int64_t i = 0; i < c; ++i)
      for (int64_t j = 0; j < i; ++j) s.xtx[i * c + j] = s.xtx[j * c + i];
  }

 private:
  static constexpr int64_t kChunk = 256;

  void add_xtx(InputStats& s, const float* x, int64_t n, int64_t cols, bool weigh_row0) {
    const int64_t pw = quantize_detail::panel_width();
    panels_.resize(size_t((cols + pw - 1) / pw * pw * n));
    quantize_detail::pack_panels(x, n, cols, panels_.data());
    if (weigh_row0 && first_scale_ != 1.f)  // row 0 scaled by sqrt(weight): its products count `weight` times
      for (int64_t q = 0; q < (cols + pw - 1) / pw; ++q)
        for (int64_t k = 0; k < pw; ++k) panels_[size_t(q * n * pw + k)] *= first_scale_;
    // Blocks of 8 rows in pairs from both ends of the triangle (each pair costs about the same).
    const int64_t nb = (cols + 7) / 8;
    auto rows = [&](int64_t blk) {
      quantize_detail::xtx_rows(panels_.data(), n, cols, blk * 8, std::min(cols, blk * 8 + 8), s.xtx.data());
    };
    pool_.run([&](int t, int nt) {
      for (int64_t p = t; p < (nb + 1) / 2; p += nt) {
        rows(p);
        if (nb - 1 - p != p) rows(nb - 1 - p);
      }
    });
  }

  ThreadPool& pool_;
  float first_scale_;
  std::vector<float> panels_;
};

}  // namespace

CalibStats collect_calib_stats(const Model& model, const std::vector<int32_t>& tokens, const CalibOptions& opts) {
  check(tokens.size() >= 2, "calibration needs at least 2 tokens, got " + std::to_string(tokens.size()));
  check(opts.ctx >= 1 && opts.max_tokens >= 1 && opts.sample_rows >= 0 && opts.first_token_weight > 0,
        "calibration: bad options");
  const ModelConfig& c = model.config();
  const int64_t total = std::min<int64_t>(int64_t(tokens.size()), opts.max_tokens);
  const int64_t ctx = std::min(opts.ctx, c.ctx_len);

  std::unique_ptr<Model> image = float_image(model);
  const Model& fm = image ? *image : model;

  ThreadPool pool(opts.threads);
  const std::unique_ptr<Backend> backend =
      create_backend("cpu", fm, BackendOptions{.pool = &pool, .max_positions = ctx});
  Backend& fwd = *backend;

  // Per layer: attn in, attn out, ffn in, ffn mid.
  const int64_t S = std::min(opts.sample_rows, total);
  std::vector<std::array<std::shared_ptr<InputStats>, 4>> per(size_t(c.n_layers));
  CalibStats stats;
  check(opts.only_layer < c.n_layers, "calibration: layer " + std::to_string(opts.only_layer) + " of a model of " +
                                          std::to_string(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    if (opts.only_layer >= 0 && l != opts.only_layer) continue;
    auto& p = per[size_t(l)];
    p[0] = make_stats(c.dim, S), p[1] = make_stats(c.q_dim(), S), p[2] = make_stats(c.dim, S);
    p[3] = make_stats(c.ffn_dim, S);
    for (const char* w : {"attn_q", "attn_k", "attn_v"}) stats[layer_tensor(l, w)] = p[0];
    stats[layer_tensor(l, "attn_output")] = p[1];
    for (const char* w : {"ffn_gate", "ffn_up"}) stats[layer_tensor(l, w)] = p[2];
    stats[layer_tensor(l, "ffn_down")] = p[3];
  }
  // The sampled rows: S token indices spread evenly over the calibration tokens.
  std::vector<int64_t> sampled(static_cast<size_t>(S));
  for (int64_t k = 0; k < S; ++k) sampled[size_t(k)] = std::min(total - 1, (2 * k + 1) * total / (2 * S));

  Accumulator acc(pool, opts.first_token_weight);
  int64_t first = 0;  // global index of the step's first token
  bool window_start = false;
  fwd.set_linear_observer([&](int64_t layer, LinearInput which, const float* x, int64_t n, int64_t cols) {
    if (which >= LinearInput::kAttnQkv) return;  // q/k/v after RoPE and the residual stream: no linear input
    if (opts.only_layer >= 0 && layer != opts.only_layer) return;
    acc.add(*per[size_t(layer)][size_t(which)], x, n, cols, first, window_start, sampled);
  });
  // Prefill chunks of 128 tokens: the chunk's activations stay in L2 while the F32 weights stream by.
  run_calibration_windows(fwd, tokens, total, ctx, 128, [&](int64_t f, bool start) { first = f, window_start = start; });
  for (auto& p : per)
    for (auto& s : p)
      if (s) Accumulator::mirror(*s);
  return stats;
}

}  // namespace tinfer

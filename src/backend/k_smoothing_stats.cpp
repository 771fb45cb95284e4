// K smoothing: q/k absolute maxima observed on a backend's forward, and the factors from them.
#include "backend/k_smoothing_stats.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "tinfer/error.h"
#include "backend/backend.h"

namespace tinfer {

void run_calibration_windows(Backend& fwd, const std::vector<int32_t>& tokens, int64_t total, int64_t ctx,
                             int64_t step, const std::function<void(int64_t, bool)>& before_chunk) {
  constexpr int64_t kBlock = 16;
  auto kv = fwd.allocate_kv((ctx + kBlock - 1) / kBlock, kBlock, KvDtype::f32);
  ForwardBatch batch;
  for (int64_t w0 = 0; w0 < total; w0 += ctx) {
    const int64_t wn = std::min(ctx, total - w0);
    for (int64_t p0 = 0; p0 < wn; p0 += step) {
      const int64_t n = std::min(step, wn - p0), first = w0 + p0;
      if (before_chunk) before_chunk(first, p0 == 0);
      batch.clear();
      batch.tokens.assign(tokens.begin() + first, tokens.begin() + first + n);
      batch.seq.assign(size_t(n), 0);
      for (int64_t i = 0; i < n; ++i) batch.positions.push_back(int32_t(p0 + i));
      batch.block_tables.emplace_back();
      for (int64_t b = 0; b < (p0 + n + kBlock - 1) / kBlock; ++b) batch.block_tables[0].push_back(int32_t(b));
      fwd.forward(batch, *kv, nullptr);
    }
  }
}

QkAbsMax collect_qk_absmax(Backend& fwd, const std::vector<int32_t>& tokens, int64_t total_max, int64_t ctx_max) {
  check(tokens.size() >= 2, "K smoothing calibration needs at least 2 tokens, got " + std::to_string(tokens.size()));
  check(ctx_max >= 1 && total_max >= 1, "K smoothing calibration: ctx and max_tokens must be >= 1");
  fwd.require(BackendCapability::kActivationObserver, "K smoothing calibration");
  const ModelConfig& c = fwd.config();
  const int64_t total = std::min<int64_t>(int64_t(tokens.size()), total_max);
  const int64_t ctx = std::min({ctx_max, c.ctx_len, fwd.max_positions()}), kv_dim = c.kv_dim(), hd = c.head_dim;
  const int64_t group = c.n_heads / c.n_kv_heads, qkv_w = c.q_dim() + 2 * kv_dim;
  QkAbsMax st;
  st.k.assign(size_t(c.n_layers), std::vector<float>(size_t(kv_dim), 0.f));
  st.q = st.k;
  fwd.set_linear_observer([&](int64_t layer, LinearInput which, const float* x, int64_t n, int64_t) {
    if (which != LinearInput::kAttnQkv) return;
    float* km = st.k[size_t(layer)].data();
    float* qm = st.q[size_t(layer)].data();
    for (int64_t i = 0; i < n; ++i) {
      const float* q = x + i * qkv_w;
      const float* k = q + c.q_dim();
      for (int64_t d = 0; d < kv_dim; ++d) km[d] = std::max(km[d], std::fabs(k[d]));
      for (int64_t h = 0; h < c.n_heads; ++h)
        for (int64_t d = 0; d < hd; ++d) qm[(h / group) * hd + d] = std::max(qm[(h / group) * hd + d], std::fabs(q[h * hd + d]));
    }
  });
  try {
    run_calibration_windows(fwd, tokens, total, ctx, 256);
  } catch (...) {
    fwd.set_linear_observer({});
    throw;
  }
  fwd.set_linear_observer({});
  return st;
}

std::vector<std::vector<float>> k_smoothing_factors(const QkAbsMax& st, int64_t hd, double alpha, double floor) {
  check(alpha >= 0 && alpha <= 1 && floor > 0 && floor <= 1 && hd > 0, "K smoothing: alpha in [0, 1], floor in (0, 1]");
  std::vector<std::vector<float>> out;
  for (size_t l = 0; l < st.k.size(); ++l) {
    const std::vector<float>& k = st.k[l];
    const std::vector<float>& q = st.q[l];
    std::vector<float> s(k.size());
    for (size_t h0 = 0; h0 + size_t(hd) <= k.size(); h0 += size_t(hd)) {
      double top = 0;
      for (size_t d = h0; d < h0 + size_t(hd); ++d) {
        const double kd = std::max<double>(k[d], 1e-30), qd = std::max<double>(q[d], 1e-30);
        s[d] = float(std::pow(kd, alpha) / std::pow(qd, 1 - alpha));
        top = std::max(top, double(s[d]));
      }
      double log_sum = 0;
      for (size_t d = h0; d < h0 + size_t(hd); ++d) {
        s[d] = float(std::max(double(s[d]), floor * top));
        log_sum += std::log(double(s[d]));
      }
      const double gm = std::exp(log_sum / double(hd));
      for (size_t d = h0; d < h0 + size_t(hd); ++d) s[d] = float(s[d] / gm);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tinfer

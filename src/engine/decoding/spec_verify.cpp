// The speculative acceptance rule (see spec_verify.h).
#include "engine/decoding/spec_verify.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace tinfer {

namespace {

// Inverse-CDF draw from weights w (not necessarily normalised; sum > 0).
int32_t draw(const std::vector<double>& w, double u) {
  double total = 0;
  for (double v : w) total += v;
  const double target = u * total;
  double acc = 0;
  int32_t last = -1;
  for (size_t t = 0; t < w.size(); ++t) {
    if (w[t] <= 0) continue;
    acc += w[t];
    last = int32_t(t);
    if (target < acc) return last;
  }
  return last;  // rounding at the top end
}

}  // namespace

SpecVerdict verify_sampled(const float* p, const float* q, int64_t vocab, std::span<const int32_t> draft,
                           const std::function<double(int, int)>& uniform) {
  check(vocab > 0, "verify_sampled: empty vocabulary");
  std::vector<double> w(static_cast<size_t>(vocab));
  const int k = static_cast<int>(draft.size());
  for (int i = 0; i < k; ++i) {
    const int32_t x = draft[size_t(i)];
    check(x >= 0 && x < vocab, "verify_sampled: draft token out of the vocabulary");
    const float* pi = p + int64_t(i) * vocab;
    const double px = pi[x], qx = q ? double(q[int64_t(i) * vocab + x]) : 1.0;
    // Keep x with probability min(1, px / qx) (qx > 0: x was drawn from q).
    if (uniform(i, 0) * qx < px) continue;
    double total = 0;
    for (int64_t t = 0; t < vocab; ++t) {
      const double qt = q ? double(q[int64_t(i) * vocab + t]) : (t == x ? 1.0 : 0.0);
      w[size_t(t)] = std::max(0.0, double(pi[t]) - qt);
      total += w[size_t(t)];
    }
    if (total <= 0)  // p == q up to rounding: any draw from p is exact
      for (int64_t t = 0; t < vocab; ++t) w[size_t(t)] = pi[t];
    return {i, draw(w, uniform(i, 1))};
  }
  const float* pk = p + int64_t(k) * vocab;
  for (int64_t t = 0; t < vocab; ++t) w[size_t(t)] = pk[t];
  return {k, draw(w, uniform(k, 1))};
}

}  // namespace tinfer

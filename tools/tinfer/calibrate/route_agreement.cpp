// route_agreement: greedy agreement and the entropy-threshold curve (see route_agreement.h).
#include "calibrate/route_agreement.h"

#include <algorithm>
#include <numeric>

#include "tinfer/error.h"

namespace tinfer::cli {

double greedy_agreement(const std::vector<int>& answer, const std::vector<int>& reference) {
  if (reference.empty()) return answer.empty() ? 1.0 : 0.0;
  size_t same = 0;
  for (size_t i = 0; i < reference.size() && i < answer.size(); ++i) same += answer[i] == reference[i];
  return double(same) / double(reference.size());
}

std::vector<RoutePoint> route_curve(const std::vector<double>& entropy, const std::vector<double>& small_agreement) {
  check(entropy.size() == small_agreement.size() && !entropy.empty(), "route_curve: one entropy per agreement");
  std::vector<size_t> order(entropy.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return entropy[a] < entropy[b]; });
  const double n = double(entropy.size());
  std::vector<RoutePoint> curve;
  // k = prompts on the small model (the k least uncertain); equal entropies move together.
  double sum_small = 0;
  curve.push_back({entropy[order[0]] - 1e-3, 0.0, 1.0});
  for (size_t k = 1; k <= order.size(); ++k) {
    sum_small += small_agreement[order[k - 1]];
    if (k < order.size() && entropy[order[k]] == entropy[order[k - 1]]) continue;
    const double t =
        k < order.size() ? 0.5 * (entropy[order[k - 1]] + entropy[order[k]]) : entropy[order[k - 1]] + 1e-3;
    curve.push_back({t, double(k) / n, (sum_small + (n - double(k))) / n});
  }
  return curve;
}

RoutePoint choose_threshold(const std::vector<RoutePoint>& curve, double target) {
  RoutePoint best = curve.front();
  for (const RoutePoint& p : curve)
    if (p.agreement >= target && p.share_small > best.share_small) best = p;
  return best;
}

}  // namespace tinfer::cli

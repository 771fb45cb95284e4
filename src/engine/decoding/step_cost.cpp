// StepCostModel: decayed least squares of step time on rows (see step_cost.h).
#include "engine/decoding/step_cost.h"

#include <algorithm>

namespace tinfer {

void StepCostModel::observe(int rows, double seconds) {
  if (rows < 1 || !(seconds > 0)) return;
  const double x = double(rows - 1);
  n_ = kDecay * n_ + 1;
  sx_ = kDecay * sx_ + x;
  sy_ = kDecay * sy_ + seconds;
  sxx_ = kDecay * sxx_ + x * x;
  sxy_ = kDecay * sxy_ + x * seconds;
}

bool StepCostModel::fitted() const {
  if (n_ < 16) return false;
  const double mx = sx_ / n_;
  return sxx_ / n_ - mx * mx >= 0.25;  // rows must vary (a spread of at least half a row)
}

double StepCostModel::row_cost() const {
  if (!fitted()) return prior_;
  const double mx = sx_ / n_, my = sy_ / n_;
  const double b = (sxy_ / n_ - mx * my) / (sxx_ / n_ - mx * mx);
  const double a = my - b * mx;  // the one-row step
  if (!(a > 0)) return prior_;
  return std::clamp(b / a, kMinCost, kMaxCost);
}

double StepCostModel::one_row_seconds() const {
  if (n_ <= 0) return 0;
  if (fitted()) {
    const double mx = sx_ / n_, my = sy_ / n_;
    const double b = (sxy_ / n_ - mx * my) / (sxx_ / n_ - mx * mx);
    if (my - b * mx > 0) return my - b * mx;
  }
  return sy_ / n_;
}

}  // namespace tinfer

// StepCostModel: what one more row costs in a decode step, measured on the steps themselves. Fits
// T(R) = a + b (R - 1) over decode-only steps of R rows (decayed least squares, so it follows the host's
// bandwidth mode and load) and reports row_cost() = b / a, the price of a row as a fraction of a one-row step:
// the adaptive-K model's c (speculator.h). Until the rows seen vary enough to fit, the prior is reported.
#pragma once
#include <cstdint>

namespace tinfer {

class StepCostModel {
 public:
  static constexpr double kDecay = 0.995;  // weight of older steps: a window of a few hundred steps
  static constexpr double kMinCost = 0.01, kMaxCost = 1.0;

  explicit StepCostModel(double prior) : prior_(prior) {}

  void observe(int rows, double seconds);
  double row_cost() const;
  // The one-row step's seconds: the fit's intercept, else the mean step seen (0 before any).
  double one_row_seconds() const;
  bool fitted() const;  // row_cost() is measured, not the prior

 private:
  double prior_;
  double n_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;  // decayed sums over x = R - 1, y = seconds
};

}  // namespace tinfer

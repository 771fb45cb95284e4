// The search behind `tinfer calibrate-exit`, free of models so tests can drive it with made-up measurements.
// Per exit-layer set, the lowest threshold whose measured quality is within the budget, by bisection on
// k = -log10(1 - threshold) in [0.3, 4] (threshold 0.5 .. 0.9999): a higher threshold lets fewer tokens exit, so
// the search assumes quality only improves as k grows. A measurement is the caller's (the model run with
// EarlyExit{layers, threshold}, its EarlyExitCounters read around the run: exit_counters_between); its price in
// bytes per decode token is plans/exit_cost.h's, and the cheapest setting within budget wins.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tinfer/early_exit.h"

namespace tinfer {

inline constexpr double kExitSearchLo = 0.3;      // k at the bottom of the range: threshold 0.5
inline constexpr double kExitSearchHi = 4.0;      // k at the top: threshold 0.9999
inline constexpr double kExitSearchWidth = 0.05;  // no bisection once the bracket of k is this narrow

inline double exit_threshold_at(double k) { return 1 - std::pow(10.0, -k); }

// The sets calibrate-exit tries without --layers: single exits after L-1, L-2, L-4, 5L/6 and 2L/3 layers, in
// that order, each once and only within [1, L-1].
std::vector<std::vector<int32_t>> default_exit_layer_sets(int64_t n_layers);

// What early exit did between two readings of the counters (after - before).
EarlyExitCounters exit_counters_between(const EarlyExitCounters& before, const EarlyExitCounters& after);

// "20" or "10,20": the layers as --exit-layers takes them.
std::string exit_layer_list(const std::vector<int32_t>& layers);

// measure(threshold) -> Trial, a struct with `bool feasible` (within budget). Measures the top of the range
// first: over budget there, nothing is, and that trial is returned. Then the bottom: within budget, it is the
// answer. Otherwise at most `steps` bisections while the bracket is wider than kExitSearchWidth; the feasible
// trial at the lowest threshold seen is returned. Measurements, in order: top, bottom, then the midpoints.
template <class Trial, class Measure>
Trial lowest_exit_threshold(Measure&& measure, int64_t steps) {
  double lo = kExitSearchLo, hi = kExitSearchHi;  // hi within budget (if anything is), lo maybe not
  Trial best = measure(exit_threshold_at(hi));
  if (!best.feasible) return best;
  Trial low = measure(exit_threshold_at(lo));
  if (low.feasible) return low;
  for (int64_t i = 0; i < steps && hi - lo > kExitSearchWidth; ++i) {
    const double mid = 0.5 * (lo + hi);
    Trial m = measure(exit_threshold_at(mid));
    if (m.feasible) best = std::move(m), hi = mid;
    else lo = mid;
  }
  return best;
}

// The feasible trial that reads the fewest bytes (`double bytes`), the first of equals; nullptr when none is.
template <class Trial>
const Trial* cheapest_within_budget(const std::vector<Trial>& trials) {
  const Trial* pick = nullptr;
  for (const Trial& t : trials)
    if (t.feasible && (!pick || t.bytes < pick->bytes)) pick = &t;
  return pick;
}

}  // namespace tinfer

// calibrate-exit's search without a model (plans/exit_search.h): the default exit-layer sets, the counters
// between two readings, and the bisection on k = -log10(1 - threshold) against made-up budgets -- which
// thresholds it measures, in which order, and which trial it returns.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "plans/exit_search.h"

namespace tinfer {
namespace {

struct Trial {
  double threshold = 0;
  bool feasible = false;
  double bytes = 0;
};

// A search against "within budget iff threshold >= limit", recording the thresholds measured.
struct FakeBudget {
  double limit;
  std::vector<double> measured;
  Trial operator()(double t) {
    measured.push_back(t);
    return Trial{t, t >= limit, 1 - t};
  }
};

double k_of(double threshold) { return -std::log10(1 - threshold); }

TEST(ExitSearch, DefaultSetsAreSingleExitsOnceEachInRange) {
  EXPECT_EQ(default_exit_layer_sets(30), (std::vector<std::vector<int32_t>>{{29}, {28}, {26}, {25}, {20}}));
  EXPECT_EQ(default_exit_layer_sets(5), (std::vector<std::vector<int32_t>>{{4}, {3}, {1}}));  // 5L/6 = 4, 2L/3 = 3
  EXPECT_EQ(default_exit_layer_sets(2), (std::vector<std::vector<int32_t>>{{1}}));
}

TEST(ExitSearch, CountersBetweenTwoReadings) {
  EarlyExitCounters before{10, 4, {0, 1, 3}}, after{25, 9, {0, 2, 6, 1}};
  const EarlyExitCounters d = exit_counters_between(before, after);
  EXPECT_EQ(d.eligible, 15);
  EXPECT_EQ(d.exited, 5);
  EXPECT_EQ(d.exited_after, (std::vector<int64_t>{0, 1, 3, 1}));
  EXPECT_EQ(exit_layer_list({10, 20}), "10,20");
  EXPECT_EQ(exit_layer_list({}), "");
}

TEST(ExitSearch, OverBudgetAtTheTopMeasuresOnce) {
  FakeBudget f{2.0};  // nothing is within budget
  const Trial t = lowest_exit_threshold<Trial>(f, 6);
  EXPECT_FALSE(t.feasible);
  ASSERT_EQ(f.measured.size(), 1u);
  EXPECT_DOUBLE_EQ(f.measured[0], exit_threshold_at(kExitSearchHi));  // 0.9999
}

TEST(ExitSearch, WithinBudgetAtTheBottomStopsThere) {
  FakeBudget f{0.0};
  const Trial t = lowest_exit_threshold<Trial>(f, 6);
  EXPECT_TRUE(t.feasible);
  ASSERT_EQ(f.measured.size(), 2u);
  EXPECT_DOUBLE_EQ(t.threshold, exit_threshold_at(kExitSearchLo));  // k = 0.3: about 0.5
}

TEST(ExitSearch, BisectsTowardsTheLowestFeasibleThreshold) {
  const double limit = 1 - std::pow(10.0, -2.0);  // 0.99: k = 2
  FakeBudget f{limit};
  const Trial t = lowest_exit_threshold<Trial>(f, 6);
  ASSERT_EQ(f.measured.size(), 2u + 6u);  // top, bottom, six midpoints (the bracket stays wider than 0.05)
  EXPECT_TRUE(t.feasible);
  EXPECT_GE(t.threshold, limit);
  // Six halvings of [0.3, 4] leave a bracket of 3.7 / 64 around k = 2: the answer is inside it.
  EXPECT_LT(k_of(t.threshold) - 2.0, 3.7 / 64 + 1e-9);
  EXPECT_DOUBLE_EQ(f.measured[2], exit_threshold_at(0.5 * (kExitSearchLo + kExitSearchHi)));
  FakeBudget none{limit};
  EXPECT_DOUBLE_EQ(lowest_exit_threshold<Trial>(none, 0).threshold, exit_threshold_at(kExitSearchHi));
  EXPECT_EQ(none.measured.size(), 2u);
}

TEST(ExitSearch, CheapestFeasibleWinsFirstOfEquals) {
  const std::vector<Trial> trials{{0.9, false, 0.1}, {0.95, true, 0.5}, {0.99, true, 0.3}, {0.999, true, 0.3}};
  EXPECT_EQ(cheapest_within_budget(trials), &trials[2]);
  EXPECT_EQ(cheapest_within_budget(std::vector<Trial>{{0.9, false, 0.1}}), nullptr);
}

}  // namespace
}  // namespace tinfer

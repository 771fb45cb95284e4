// tinfer calibrate-route's arithmetic: greedy agreement of token lists, the threshold curve over a prompt mix and
// the choice that keeps the target agreement with the most prompts on the small model.
#include <gtest/gtest.h>

#include "calibrate/route_agreement.h"

namespace tinfer::cli {
namespace {

TEST(RouteAgreement, PositionwiseShareOfTheReference) {
  EXPECT_DOUBLE_EQ(greedy_agreement({1, 2, 3, 4}, {1, 2, 3, 4}), 1.0);
  EXPECT_DOUBLE_EQ(greedy_agreement({1, 9, 3, 4}, {1, 2, 3, 4}), 0.75);    // one substitution
  EXPECT_DOUBLE_EQ(greedy_agreement({1, 2}, {1, 2, 3, 4}), 0.5);           // stopped early
  EXPECT_DOUBLE_EQ(greedy_agreement({1, 2, 3, 4, 5, 6}, {1, 2, 3}), 1.0);  // longer: the reference's positions only
  EXPECT_DOUBLE_EQ(greedy_agreement({}, {}), 1.0);
  EXPECT_DOUBLE_EQ(greedy_agreement({5}, {}), 0.0);
}

TEST(RouteAgreement, CurveAndChoice) {
  // Entropies out of order; the two least uncertain prompts agree fully, the third half, the last not at all.
  const std::vector<double> h = {2.0, 0.5, 1.0, 3.0};
  const std::vector<double> a = {0.5, 1.0, 1.0, 0.0};
  const auto curve = route_curve(h, a);
  ASSERT_EQ(curve.size(), 5u);
  EXPECT_DOUBLE_EQ(curve[0].share_small, 0.0);
  EXPECT_DOUBLE_EQ(curve[0].agreement, 1.0);
  EXPECT_LT(curve[0].threshold, 0.5);
  EXPECT_DOUBLE_EQ(curve[2].threshold, 1.5);  // halfway between 1.0 and 2.0
  EXPECT_DOUBLE_EQ(curve[2].share_small, 0.5);
  EXPECT_DOUBLE_EQ(curve[2].agreement, 1.0);
  EXPECT_DOUBLE_EQ(curve[3].agreement, (1 + 1 + 0.5 + 1) / 4.0);
  EXPECT_DOUBLE_EQ(curve[4].share_small, 1.0);
  EXPECT_GT(curve[4].threshold, 3.0);
  EXPECT_DOUBLE_EQ(choose_threshold(curve, 0.95).share_small, 0.5);
  EXPECT_DOUBLE_EQ(choose_threshold(curve, 0.85).share_small, 0.75);
  EXPECT_DOUBLE_EQ(choose_threshold(curve, 0.5).share_small, 1.0);
}

TEST(RouteAgreement, EqualEntropiesMoveTogether) {
  const auto curve = route_curve({1.0, 1.0, 2.0}, {1.0, 0.0, 1.0});
  ASSERT_EQ(curve.size(), 3u);  // none, both 1.0 prompts, all
  EXPECT_NEAR(curve[1].share_small, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(curve[1].agreement, 2.0 / 3.0, 1e-12);
}

}  // namespace
}  // namespace tinfer::cli

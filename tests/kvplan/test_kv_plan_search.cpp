// calibrate-kv's choice with no model: the greedy picks the cheapest lowerings per unit of cost within the
// budget (hand-computed answers), cost-free lowerings first, nothing when nothing fits; back_off raises the
// most costly lowering first and stops at its target.
#include <gtest/gtest.h>

#include "tinfer/error.h"
#include "plans/kv_plan_search.h"

namespace tinfer::cli {
namespace {

// A slot with floor f32 (256 bytes), int8 (66) and int4 (36), costs as given.
KvSlot slot(double c8, double c4) {
  return KvSlot{{{KvDtype::f32, 256, 0}, {KvDtype::int8, 66, c8}, {KvDtype::int4, 36, c4}}};
}

TEST(KvPlanSearch, ZeroBudgetKeepsEveryFloorUnlessFree) {
  const std::vector<KvSlot> s = {slot(0.1, 0.5), slot(0.0, 0.2)};
  EXPECT_EQ(choose_within_budget(s, 0.0), (SlotChoice{0, 1}));  // slot 1's int8 is free
}

TEST(KvPlanSearch, GreedyByBytesPerCost) {
  // Savings: f32->int8 190 bytes, int8->int4 30, f32->int4 220.
  // slot 0: int8 0.001 (190000 B/unit), int4 0.010; slot 1: int8 0.004 (47500), int4 0.0045;
  // slot 2: int8 0.02, int4 0.03.
  const std::vector<KvSlot> s = {slot(0.001, 0.010), slot(0.004, 0.0045), slot(0.02, 0.03)};
  // Budget 0.006: slot0 int8 (0.001), then slot1 f32->int8 (47500/unit) vs slot1 f32->int4 (220/0.0045 = 48889):
  // int4 wins (total 0.0055); then slot0 int8->int4 adds 0.009: too much. slot2 never fits.
  const SlotChoice c = choose_within_budget(s, 0.006);
  EXPECT_EQ(c, (SlotChoice{1, 2, 0}));
  EXPECT_NEAR(predicted_cost(s, c), 0.0055, 1e-12);
  EXPECT_EQ(plan_bytes(s, c), 66 + 36 + 256);
  // A large budget lowers everything to int4.
  EXPECT_EQ(choose_within_budget(s, 1.0), (SlotChoice{2, 2, 2}));
}

TEST(KvPlanSearch, RefusesOptionsNotGettingCheaper) {
  std::vector<KvSlot> s = {KvSlot{{{KvDtype::f32, 256, 0}, {KvDtype::int8, 256, 0}}}};
  EXPECT_THROW(choose_within_budget(s, 1.0), Error);
}

TEST(KvPlanSearch, BackOffRaisesTheMostCostlyStepFirst) {
  const std::vector<KvSlot> s = {slot(0.001, 0.010), slot(0.004, 0.0045), slot(0.02, 0.03)};
  SlotChoice c{2, 2, 1};  // steps: slot0 int4 0.009, slot1 int4 0.0005, slot2 int8 0.02
  ASSERT_TRUE(back_off(s, c, 0.03));  // predicted 0.0345 -> raise slot2 (0.02): 0.0145 <= 0.03
  EXPECT_EQ(c, (SlotChoice{2, 2, 0}));
  ASSERT_TRUE(back_off(s, c, 0.0));  // everything back to the floor, most costly first
  EXPECT_EQ(c, (SlotChoice{0, 0, 0}));
  EXPECT_FALSE(back_off(s, c, 0.0));  // nothing left to raise
}

TEST(KvPlanSearch, BackOffTakesAtLeastOneStep) {
  const std::vector<KvSlot> s = {slot(0.001, 0.010), slot(0.004, 0.0045)};
  SlotChoice c{1, 1};
  ASSERT_TRUE(back_off(s, c, 1.0));  // already under the target: still one step (the measured plan was over)
  EXPECT_EQ(c, (SlotChoice{1, 0}));
}

}  // namespace
}  // namespace tinfer::cli

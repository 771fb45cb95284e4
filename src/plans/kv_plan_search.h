// The choice behind `tinfer calibrate-kv`, with no model: each slot (one layer's K, or its V) has options
// from its floor type (f32 or f16, cost 0) down to cheaper types, each with its bytes per token and its
// measured cost (quality loss with only this slot lowered, e.g. KLD vs the f32 cache). Costs are assumed to
// add; the caller measures the combined plan and backs off while it is over budget.
#pragma once
#include <cstdint>
#include <vector>

#include "tinfer/kv_dtype.h"

namespace tinfer {

struct SlotOption {
  KvDtype type;
  int64_t bytes = 0;  // bytes per token this slot takes in this type (all kv heads, scales included)
  double cost = 0;    // measured loss with only this slot lowered to this type (>= 0; the floor's is 0)
};
struct KvSlot {
  std::vector<SlotOption> options;  // [0] = the floor, then strictly fewer bytes each
};
using SlotChoice = std::vector<int>;  // [slots]: index into that slot's options

double predicted_cost(const std::vector<KvSlot>& slots, const SlotChoice& choice);
int64_t plan_bytes(const std::vector<KvSlot>& slots, const SlotChoice& choice);

// Greedy: from every slot at its floor, repeatedly make the lowering (any slot, to any cheaper option) with
// the most bytes saved per unit of added cost (a lowering that adds no cost first, most bytes first) that
// keeps the predicted cost within budget; stops when none fits.
SlotChoice choose_within_budget(const std::vector<KvSlot>& slots, double budget);

// Raises the most costly lowering (the slot whose last step down added the most cost) one option up, and
// again, until the predicted cost is at most `target` (at least one step). false when nothing is lowered.
bool back_off(const std::vector<KvSlot>& slots, SlotChoice& choice, double target);

}  // namespace tinfer

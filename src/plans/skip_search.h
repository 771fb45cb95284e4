// The search behind `tinfer calibrate-skip`, free of models so tests can drive it with made-up costs:
// candidates are single sub-blocks (layer l's attention or MLP), each with its measured quality cost when
// skipped alone and the weight bytes skipping it saves. Greedy: the candidates whose own cost fits the budget,
// cheapest cost per saved byte first (ties: the later layer first, then MLP before attention), each added when
// the plan with it, measured as a whole, stays within the budget (costs of skipped blocks need not add up).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "tinfer/layer_skip.h"

namespace tinfer {

struct SkipCandidate {
  int64_t layer = 0;
  bool mlp = false;         // the MLP block, else the attention block
  double cost = 0;          // measured quality cost skipped alone (budget units, >= 0)
  double saved_bytes = 0;   // weight bytes a decode step no longer reads
};

struct SkipSearchResult {
  LayerSkip skip;
  double cost = 0;          // the last measured cost of `skip` (0 when empty)
  int evaluations = 0;      // whole plans measured
  std::vector<int> tried;   // candidate indices in the order tried
};

// measure(plan) -> the plan's quality cost in budget units. A candidate that would leave no layer with its
// attention is never added. At most max_evals plans are measured.
SkipSearchResult greedy_skip_search(int64_t n_layers, const std::vector<SkipCandidate>& candidates, double budget,
                                    const std::function<double(const LayerSkip&)>& measure, int max_evals = 1 << 30);

}  // namespace tinfer

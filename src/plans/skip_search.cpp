// Greedy layer-skip search (see plans/skip_search.h).
#include "plans/skip_search.h"

#include <algorithm>
#include <numeric>

namespace tinfer {

SkipSearchResult greedy_skip_search(int64_t n_layers, const std::vector<SkipCandidate>& candidates, double budget,
                                    const std::function<double(const LayerSkip&)>& measure, int max_evals) {
  std::vector<int> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  auto per_byte = [&](int i) { return candidates[size_t(i)].cost / std::max(candidates[size_t(i)].saved_bytes, 1.0); };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const SkipCandidate &x = candidates[size_t(a)], &y = candidates[size_t(b)];
    if (per_byte(a) != per_byte(b)) return per_byte(a) < per_byte(b);
    if (x.layer != y.layer) return x.layer > y.layer;
    return x.mlp > y.mlp;
  });
  SkipSearchResult r;
  r.skip = LayerSkip::none(n_layers);
  int64_t attention_kept = n_layers;
  for (int i : order) {
    const SkipCandidate& c = candidates[size_t(i)];
    if (c.cost > budget) continue;                      // alone already over: not worth a measurement
    if (!c.mlp && attention_kept == 1) continue;        // some layer must keep its attention (and hold KV)
    if (r.evaluations >= max_evals) break;
    LayerSkip trial = r.skip;
    (c.mlp ? trial.mlp : trial.attn)[size_t(c.layer)] = 1;
    r.tried.push_back(i);
    ++r.evaluations;
    const double cost = measure(trial);
    if (cost <= budget) {
      r.skip = std::move(trial), r.cost = cost;
      if (!c.mlp) --attention_kept;
    }
  }
  return r;
}

}  // namespace tinfer

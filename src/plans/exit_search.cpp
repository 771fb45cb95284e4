// calibrate-exit's candidate sets and counter arithmetic (see exit_search.h).
#include "plans/exit_search.h"

#include <algorithm>

namespace tinfer {

std::vector<std::vector<int32_t>> default_exit_layer_sets(int64_t n_layers) {
  const int64_t L = n_layers;
  std::vector<std::vector<int32_t>> sets;
  for (int64_t e : {L - 1, L - 2, L - 4, (5 * L) / 6, (2 * L) / 3})
    if (e >= 1 && e <= L - 1 && std::none_of(sets.begin(), sets.end(), [&](const auto& s) { return s[0] == e; }))
      sets.push_back({int32_t(e)});
  return sets;
}

EarlyExitCounters exit_counters_between(const EarlyExitCounters& before, const EarlyExitCounters& after) {
  EarlyExitCounters d = after;
  d.eligible -= before.eligible, d.exited -= before.exited;
  for (size_t l = 0; l < d.exited_after.size() && l < before.exited_after.size(); ++l)
    d.exited_after[l] -= before.exited_after[l];
  return d;
}

std::string exit_layer_list(const std::vector<int32_t>& layers) {
  std::string s;
  for (int32_t l : layers) s += (s.empty() ? "" : ",") + std::to_string(l);
  return s;
}

}  // namespace tinfer

// Early exit's bytes per decode token (see plans/exit_cost.h).
#include "plans/exit_cost.h"

#include <numeric>

namespace tinfer {

double ExitCostModel::full() const { return std::accumulate(layer_bytes.begin(), layer_bytes.end(), 0.0) + head_bytes; }

double ExitCostModel::mean(const std::vector<int32_t>& layers, const EarlyExitCounters& c) const {
  if (c.eligible == 0) return full();
  const size_t L = layer_bytes.size();
  double total = double(c.eligible - c.exited) * (full() + double(layers.size()) * head_bytes);
  for (size_t k = 0; k < layers.size(); ++k) {
    const size_t e = size_t(layers[k]);
    if (e >= c.exited_after.size() || c.exited_after[e] == 0) continue;
    double one = double(k + 1) * head_bytes;  // the exit heads at layers[0..k]
    for (size_t l = 0; l < L; ++l) one += l < e ? layer_bytes[l] : qkv_bytes[l];
    total += double(c.exited_after[e]) * one;
  }
  return total / double(c.eligible);
}

}  // namespace tinfer

// Shared pieces of the forward tests: the normalised mean squared error of a logit row against the reference.
#pragma once
#include <algorithm>
#include <vector>

namespace tinfer::forward_test {

inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return num / std::max(den, 1e-30);
}

}  // namespace tinfer::forward_test

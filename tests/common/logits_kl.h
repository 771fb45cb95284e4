// Test helper: the mean KL(base || mine) of next-token distributions given as raw logits, [rows][vocab] each,
// in double (the tests compare KV-cache precisions' logits against the f32 cache's).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace tinfer::test {

inline double mean_kl(const std::vector<float>& base, const std::vector<float>& mine, int64_t rows, int64_t vocab) {
  double kl = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = &base[r * vocab];
    const float* b = &mine[r * vocab];
    double ma = -INFINITY, mb = -INFINITY, sa = 0, sb = 0;
    for (int64_t v = 0; v < vocab; ++v) ma = std::max(ma, double(a[v])), mb = std::max(mb, double(b[v]));
    for (int64_t v = 0; v < vocab; ++v) sa += std::exp(a[v] - ma), sb += std::exp(b[v] - mb);
    for (int64_t v = 0; v < vocab; ++v) {
      const double la = a[v] - ma - std::log(sa), lb = b[v] - mb - std::log(sb);
      kl += std::exp(la) * (la - lb);
    }
  }
  return kl / double(rows);
}

}  // namespace tinfer::test

// Shared helpers for the kernel tests: random data, GGUF-layout weights via the type table, error norms.
#pragma once
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "quant/type_table.h"

namespace tinfer::test {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// rows x cols random weights, quantized to `type` with the reference quantizer (GGUF row layout).
inline std::vector<uint8_t> random_weights(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  const auto f = random_floats(size_t(rows * cols), seed, 0.05f);
  std::vector<uint8_t> w(row_bytes(type, cols) * size_t(rows));
  for (int64_t r = 0; r < rows; ++r)
    type_traits(type).from_float(f.data() + r * cols, w.data() + row_bytes(type, cols) * size_t(r), cols);
  return w;
}

// Normalised mean squared error sum((a-b)^2) / sum(b^2).
inline double nmse(const float* a, const float* b, size_t n) {
  double e = 0, s = 0;
  for (size_t i = 0; i < n; ++i) {
    e += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    s += double(b[i]) * b[i];
  }
  return s > 0 ? e / s : e;
}

// max |a-b| / rms(b): a per-element bound that does not blow up where b happens to be near 0.
inline double max_err_over_rms(const float* a, const float* b, size_t n) {
  double mx = 0, s = 0;
  for (size_t i = 0; i < n; ++i) {
    mx = std::max(mx, std::fabs(double(a[i]) - b[i]));
    s += double(b[i]) * b[i];
  }
  const double rms = std::sqrt(s / double(n));
  return rms > 0 ? mx / rms : mx;
}

}  // namespace tinfer::test

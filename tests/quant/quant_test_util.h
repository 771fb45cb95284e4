// Shared helpers for the quant tests: quantize/dequantize a row through the type table, error metric.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "quant/type_table.h"

namespace tinfer::test {

inline std::vector<uint8_t> quantize(const TypeTraits& t, const std::vector<float>& x) {
  std::vector<uint8_t> q(row_bytes(t.type, int64_t(x.size())));
  t.from_float(x.data(), q.data(), int64_t(x.size()));
  return q;
}

inline std::vector<float> dequantize(const TypeTraits& t, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(size_t(n), 0.0f);
  t.to_float(q.data(), y.data(), n);
  return y;
}

// ||x - y|| / ||x|| (0 when both are zero).
inline double relative_rmse(const std::vector<float>& x, const std::vector<float>& y) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    ref += double(x[i]) * x[i];
  }
  return ref == 0 ? std::sqrt(err) : std::sqrt(err / ref);
}

}  // namespace tinfer::test

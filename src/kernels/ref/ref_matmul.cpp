// Reference matmul (double accumulation over the type table's dequantized GGUF rows) and the
// reference activation quantizer used by the int8 path.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/ref/ref_kernels.h"
#include "quant/type_table.h"

namespace tinfer::ref {

void matmul(DType type, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y) {
  const auto& tt = type_traits(type);
  const size_t rb = row_bytes(type, cols);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    tt.to_float(static_cast<const uint8_t*>(w) + rb * size_t(r), row.data(), cols);
    for (int64_t i = 0; i < m; ++i) {
      double s = 0;
      for (int64_t c = 0; c < cols; ++c) s += double(row[size_t(c)]) * double(x[i * cols + c]);
      y[i * rows + r] = float(s);
    }
  }
}

void quantize_act_row(const float* x, int64_t cols, ActQuant mode, int8_t* q, float* d, int16_t* s16) {
  float row_amax = 0;
  for (int64_t c = 0; c < cols; ++c) row_amax = std::max(row_amax, std::fabs(x[c]));
  for (int64_t b = 0; b < cols / 32; ++b) {
    float amax = 0;
    for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(x[b * 32 + k]));
    if (mode == ActQuant::token) amax = row_amax;
    const float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
    int32_t s[2] = {0, 0};
    for (int k = 0; k < 32; ++k) {
      const int v = int(std::nearbyint(x[b * 32 + k] * id));
      q[b * 32 + k] = int8_t(v);
      s[k / 16] += v;
    }
    d[b] = db;
    s16[2 * b] = int16_t(s[0]);
    s16[2 * b + 1] = int16_t(s[1]);
  }
}

void matmul_qact(DType type, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y,
                 ActQuant mode) {
  const int64_t nb = cols / 32;
  std::vector<float> xq(static_cast<size_t>(m * cols)), d(static_cast<size_t>(nb));
  std::vector<int8_t> q(static_cast<size_t>(cols));
  std::vector<int16_t> s16(static_cast<size_t>(2 * nb));
  for (int64_t i = 0; i < m; ++i) {
    quantize_act_row(x + i * cols, cols, mode, q.data(), d.data(), s16.data());
    for (int64_t c = 0; c < cols; ++c) xq[size_t(i * cols + c)] = float(double(d[size_t(c / 32)]) * q[size_t(c)]);
  }
  matmul(type, w, rows, cols, xq.data(), m, y);
}

}  // namespace tinfer::ref

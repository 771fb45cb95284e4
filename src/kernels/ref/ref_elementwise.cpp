// Reference element-wise ops: scalar, double accumulation for the reductions.
#include <cmath>

#include "kernels/ref/ref_kernels.h"

namespace tinfer::ref {

void rmsnorm(const float* x, const float* w, float* out, int64_t n, float eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const double r = 1.0 / std::sqrt(ss / double(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = float(x[i] * r * w[i]);
}

void silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = float(gate[i] / (1.0 + std::exp(-double(gate[i]))) * up[i]);
}

void gelu_mul(float* gate, const float* up, int64_t n) {  // tanh approximation, as Gemma's gelu_pytorch_tanh
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    gate[i] = float(0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))) * up[i]);
  }
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void softmax_inplace(float* x, int64_t n) {
  if (n <= 0) return;
  double mx = x[0], s = 0;
  for (int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  for (int64_t i = 0; i < n; ++i) s += std::exp(double(x[i]) - mx);
  for (int64_t i = 0; i < n; ++i) x[i] = float(std::exp(double(x[i]) - mx) / s);
}

float dot_f32(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * b[i];
  return float(s);
}

void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = float(y[i] + double(a) * x[i]);
}

void scale_inplace(float* x, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace tinfer::ref

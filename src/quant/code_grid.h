// Internal: the row-level code-grid functions (TypeTraits::grid / get_codes / set_codes /
// from_float_weighted) built once from a few per-block primitives each family file provides, so the
// block walk, the clamping and the choice between searches live here and nowhere else.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "quant/ref_quants.h"

namespace tinfer::quant_ref {

// Per-block primitives of a family with block struct B of N elements:
//   Codes(b, q):          the N raw codes of b
//   PutCodes(b, q):       rewrite b's codes (each already in range), leaving its scales and mins alone
//   Grid(b, scale, off):  per element, x = scale * code + off as b's scales define it
template <class B, int N, CodeRange R, void (*Codes)(const B&, int32_t*), void (*PutCodes)(B&, const int32_t*),
          void (*Grid)(const B&, float*, float*)>
struct CodeGrid {
  static void grid(const void* blocks, float* scale, float* offset, int64_t n) {
    const auto* b = static_cast<const B*>(blocks);
    for (int64_t i = 0; i < n / N; ++i) Grid(b[i], scale + i * N, offset + i * N);
  }
  static void get_codes(const void* blocks, int32_t* q, int64_t n) {
    const auto* b = static_cast<const B*>(blocks);
    for (int64_t i = 0; i < n / N; ++i) Codes(b[i], q + i * N);
  }
  // Codes outside the range are clamped to it (the nearest representable code).
  static void set_codes(void* blocks, const int32_t* q, int64_t n) {
    auto* b = static_cast<B*>(blocks);
    int32_t c[N];
    for (int64_t i = 0; i < n / N; ++i) {
      for (int j = 0; j < N; ++j) c[j] = std::clamp(q[i * N + j], int32_t(R.min), int32_t(R.max));
      PutCodes(b[i], c);
    }
  }
};

// sum_i w_i (x_i - y_i)^2 over n elements (w == nullptr: all weights 1), in double.
inline double weighted_sq_error(const float* x, const float* y, const float* w, int n) {
  double e = 0;
  for (int i = 0; i < n; ++i) {
    const double d = double(x[i]) - y[i];
    e += (w ? double(w[i]) : 1.0) * d * d;
  }
  return e;
}

// Importance-weighted quantize of n elements. Per block, the family's weighted scale search
// Search(x, w, b) (w: N weights, never null) and the bit-exact reference RefQuant are both run and the
// block with the lower weighted squared error is kept, the reference on ties: the result is never worse
// than from_float in the weighted error, block by block, whatever the search's heuristics do.
template <class B, int N, void (*RefQuant)(const float*, void*, int64_t),
          void (*Search)(const float*, const float*, B&), void (*ToFloat)(const void*, float*, int64_t)>
void weighted_quantize(const float* src, void* dst, int64_t n, const float* importance) {
  auto* out = static_cast<B*>(dst);
  const std::vector<float> ones(N, 1.0f);
  float y[N];
  for (int64_t i = 0; i < n / N; ++i) {
    const float* x = src + i * N;
    const float* w = importance ? importance + i * N : ones.data();
    B ref, cand;
    RefQuant(x, &ref, N);
    double wsum = 0;
    for (int j = 0; j < N; ++j) wsum += w[j];
    if (!(wsum > 0)) {  // nothing to weigh: the reference block
      out[i] = ref;
      continue;
    }
    Search(x, w, cand);
    ToFloat(&ref, y, N);
    const double e_ref = weighted_sq_error(x, y, w, N);
    ToFloat(&cand, y, N);
    const double e_cand = weighted_sq_error(x, y, w, N);
    out[i] = e_cand < e_ref ? cand : ref;
  }
}

}  // namespace tinfer::quant_ref

// Defines the four code-grid functions of family `name` (declared in ref_quants.h) from its primitives
// and its weighted search; `name##_from_float` / `name##_to_float` are the family's reference pair.
#define TINFER_DEFINE_CODE_GRID(name, B, N, RANGE, codes, put_codes, grid_fn, search)              \
  void name##_grid(const void* b, float* s, float* o, int64_t n) {                                 \
    CodeGrid<B, N, RANGE, codes, put_codes, grid_fn>::grid(b, s, o, n);                            \
  }                                                                                                \
  void name##_get_codes(const void* b, int32_t* q, int64_t n) {                                    \
    CodeGrid<B, N, RANGE, codes, put_codes, grid_fn>::get_codes(b, q, n);                          \
  }                                                                                                \
  void name##_set_codes(void* b, const int32_t* q, int64_t n) {                                    \
    CodeGrid<B, N, RANGE, codes, put_codes, grid_fn>::set_codes(b, q, n);                          \
  }                                                                                                \
  void name##_from_float_weighted(const float* x, void* dst, int64_t n, const float* importance) { \
    weighted_quantize<B, N, name##_from_float, search, name##_to_float>(x, dst, n, importance);    \
  }

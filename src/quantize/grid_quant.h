// Internal: the quantizers behind quantize_rtn / quantize_gptq, on an explicit type-table row (tests can
// pass a row of their own), and the helpers they share with the scale searches.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "quant/type_table.h"
#include "quantize/calib_stats.h"
#include "quantize/methods.h"

namespace tinfer {

class ThreadPool;

namespace quantize_detail {

bool is_float_type(DType t);

// The code of w on a grid point: the nearest of scale * q + offset, q in [cmin, cmax]; a zero scale keeps
// `fallback` (every code dequantizes to the offset then).
inline int32_t snap_code(float w, float scale, float offset, int32_t fallback, int cmin, int cmax) {
  if (scale == 0.f || !std::isfinite(scale)) return fallback;
  float q = std::nearbyint((w - offset) / scale);
  q = std::min(std::max(q, float(cmin)), float(cmax));
  return int32_t(q);
}

// The type's row of n elements fitted with its importance-weighted scale search (importance: n values,
// or nullptr for plain squared error), then every code moved to its nearest grid point.
void fit_and_snap(const TypeTraits& tt, const float* w, void* dst, int64_t n, const float* importance);

// RTN: from_float per row without importance (bit-exact with ggml), fit_and_snap per row with it.
std::vector<uint8_t> rtn(const TypeTraits& tt, const float* w, int64_t rows, int64_t cols, const float* importance,
                         ThreadPool& pool);
// Clip search helpers (clip.cpp). The output error of a block's weight error e (n values) under the
// Hessian h (row stride ld, at the block's first column): the sum over its sub-blocks of at most
// kClipSubBlock columns of e_s^T H_ss e_s (the cross terms between sub-blocks are left out: cheap, and exact
// for 32-element blocks).
constexpr int64_t kClipSubBlock = 32;
double block_output_error(const float* e, int64_t n, const double* h, int64_t ld);
// GPTQ's view of a block's error: what remains of it when the columns after the block compensate it,
// e^T (U_b^T U_b)^-1 e = || U_b^-T e ||^2, U_b the block's diagonal block of the upper factor U of the
// (remaining) inverse Hessian (U^T U = H^-1), row stride ld.
double block_compensated_error(const float* e, int64_t n, const float* u, int64_t ld);
// Which error a clip search minimises: block_output_error under h, or (u set) block_compensated_error.
struct BlockMetric {
  const double* h = nullptr;
  const float* u = nullptr;
  int64_t ld = 0;
};
struct ClipScratch {
  std::vector<float> clamped, e, scale, offset;
  std::vector<double> y;
  std::vector<int32_t> codes;
  std::vector<uint8_t> best, trial;
  double ratio = 1;  // the chosen clip ratio of the last fit_block_clipped
};
// One block of n elements (whole type blocks) written to dst: for each clip ratio r of the options' grid
// (r = 1 first), the grid fitted to w clamped at +-r max|w| (importance-weighted when importance is given),
// the unclamped w snapped onto it; the r with the least block_output_error wins (ties: the larger r).
// Returns that error; *err_unclipped gets r = 1's.
double fit_block_clipped(const TypeTraits& tt, const float* w, int64_t n, const float* importance,
                         const BlockMetric& metric, const ClipOptions& opts, void* dst, ClipScratch& s,
                         double* err_unclipped);

std::vector<uint8_t> gptq(const TypeTraits& tt, const float* w, int64_t rows, int64_t cols, const InputStats& x,
                          const GptqOptions& opts, ThreadPool& pool);

}  // namespace quantize_detail
}  // namespace tinfer

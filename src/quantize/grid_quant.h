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
std::vector<uint8_t> gptq(const TypeTraits& tt, const float* w, int64_t rows, int64_t cols, const InputStats& x,
                          const GptqOptions& opts, ThreadPool& pool);

}  // namespace quantize_detail
}  // namespace tinfer

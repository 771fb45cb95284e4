// The weight-quantization methods. Each turns one fp32 matrix W [rows][cols] into GGUF blocks of `type`
// (rows * row_bytes(type, cols) bytes), an ordinary tensor of that type: every method works on the
// type's own grid (its block scales, mins and super-blocks; TypeTraits::grid / set_codes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "quant/dtype.h"
#include "quantize/calib_stats.h"
#include "quantize/float_model.h"

namespace tinfer {

// Round-to-nearest with the type's scale search. importance (cols values, or nullptr): per-column
// weights of the squared error in the scale search (the importance-weighted RTN baseline; pass
// activation_importance(stats)). Without importance: the type's from_float per row (bit-exact with ggml);
// with it: from_float_weighted per row, then every code moved to the nearest point of the stored grid.
// Float targets (F32/F16/BF16) are converted. threads: 0 = hardware concurrency.
std::vector<uint8_t> quantize_rtn(DType type, const float* w, int64_t rows, int64_t cols, const float* importance,
                                  int threads = 0);

// Per-column activation energy sum_sq / n_tokens (cols values): the importance of importance-weighted RTN,
// and the one GPTQ fits its block scales with (so GPTQ without cross-column updates == this RTN).
std::vector<float> activation_importance(const InputStats& x);

struct GptqOptions {
  double damp = 0.01;      // lambda = damp * mean(diag(H)) added to the diagonal
  int64_t block = 128;     // columns per lazy-update block
  bool act_order = false;  // quantize columns in order of decreasing diag(H) (within the type's grid)
  int threads = 0;         // 0 = hardware concurrency
};
// GPTQ: columns quantized one at a time onto the grid, each block's scales fitted to the
// error-updated weights when the column enters a new (super-)block (from_float_weighted with
// activation_importance(x)); the rounding error is spread over the not-yet-quantized columns with the
// inverse Hessian (Cholesky), lazily per `block` columns (rounded up to a multiple of the type block).
// Inputs never seen (diag(H) == 0) get zero weights; a Hessian that stays singular gets 10x damping (up to
// 8 times). With act_order all block scales are fitted up front on the original weights (static groups).
// Float targets are converted.
std::vector<uint8_t> quantize_gptq(DType type, const float* w, int64_t rows, int64_t cols, const InputStats& x,
                                   const GptqOptions& opts);

// One folded scale search (AWQ or SmoothQuant) and its outcome, for the report.
struct ScaleFold {
  std::string group;     // e.g. "blk.3 attn_norm -> q,k,v"
  double alpha = 0;      // the chosen exponent
  double err_plain = 0;  // output error of quantizing without scales (relative, on the sample)
  double err_scaled = 0; // with the chosen scales
};

// AWQ: per input channel s = mean|x|^alpha (alpha on a grid over [0, 1]) chosen per group to minimise
// the output error of the quantized layer(s) on the calibration sample, folded exactly into the
// preceding op: attn_norm -> q,k,v; ffn_norm -> gate,up; v -> o (when shapes allow); up -> down.
// Updates `m` and `stats` (the folded inputs' statistics are rescaled) in place.
std::vector<ScaleFold> awq_apply(FloatModel& m, CalibStats& stats, DType type);

// SmoothQuant (W8A8): s = max|x|^alpha / max|w|^(1-alpha) per input channel, alpha calibrated per group
// against the int8 activation quantization the runtime performs; folded like AWQ.
std::vector<ScaleFold> smoothquant_apply(FloatModel& m, CalibStats& stats, DType type);

}  // namespace tinfer

// The weight-quantization methods. Each turns one fp32 matrix W [rows][cols] into GGUF blocks of `type`
// (rows * row_bytes(type, cols) bytes), an ordinary tensor of that type: every method works on the
// type's own grid (its block scales, mins and super-blocks; TypeTraits::grid / set_codes).
#pragma once
#include <cstdint>
#include <functional>
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

// Clip search: each block's grid fitted to its weights clamped at +-r max|w|, r on n_grid points from 1 down
// to 1 - max_shrink, chosen per row and block by the output error on the calibration inputs (X^T X).
struct ClipOptions {
  int n_grid = 11;          // r = 1, 0.95, ..., 0.5 with the defaults
  double max_shrink = 0.5;  // the smallest ratio is 1 - max_shrink
  int threads = 0;          // 0 = hardware concurrency
};
struct ClipReport {
  int64_t blocks = 0, clipped = 0;             // blocks, and those whose best ratio is below 1
  double err_plain = 0, err_clipped = 0;       // summed block output errors without and with the search
};
// RTN with a clip search: per row and type block, the grid of the best clip ratio (block_output_error in
// grid_quant.h: the block's error under the diagonal sub-blocks of X^T X); the weights themselves are
// snapped unclamped onto it. importance: nullptr = the type's plain from_float fit, else the importance-
// weighted fit (as quantize_rtn). Never a larger summed block error than the unclipped fit (r = 1 is on
// the grid). report (optional): the counts and errors.
std::vector<uint8_t> quantize_rtn_clipped(DType type, const float* w, int64_t rows, int64_t cols, const InputStats& x,
                                          const float* importance, const ClipOptions& opts,
                                          ClipReport* report = nullptr);

struct GptqOptions {
  double damp = 0.01;      // lambda = damp * mean(diag(H)) added to the diagonal
  int64_t block = 128;     // columns per lazy-update block
  bool act_order = false;  // quantize columns in order of decreasing diag(H) (within the type's grid)
  int threads = 0;         // 0 = hardware concurrency
  // Clip search in each block's scale fit (not with act_order): the grid fitted to the error-updated block
  // clamped at the ratio of least block output error (ClipOptions, n_grid 1 = off).
  ClipOptions clip{.n_grid = 1};
  // The clip search's error: false = the block's output error under X^T X (as quantize_rtn_clipped), true =
  // what is left of it after the later columns compensate (GPTQ's own loss, via the inverse Hessian's factor).
  bool clip_compensated = true;
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
  // AWQ with a held-out check: the same two errors on the held-out half of the sample (0 without the check)
  double err_held_plain = 0, err_held_scaled = 0;
  bool folded = false;   // scales were folded into the model (false: skipped, or no alpha beat no scales)
  std::string note;      // why a group was skipped ("grouped-query attention: ...", "rows of 172 ...")
};

struct ScaleSearchOptions {
  int n_grid = 20;              // alpha on n_grid evenly spaced points of [0, 1], both ends included
  int64_t max_sample_rows = 256;  // rows of the calibration sample the losses use; 0 = all of them
  bool weighted = false;        // AWQ: the search quantizes with importance-weighted RTN (else plain RTN)
  bool per_token = false;       // SmoothQuant: simulate per-token int8 activations (else per 32-block, as
                                // the CPU kernels quantize them)
  int threads = 0;              // 0 = hardware concurrency
  // The type a tensor will be written in (the recipe's plan: fallbacks and the recipe's higher-precision
  // tensors differ from the target); unset = `type` for every tensor. AWQ searches each group with the type
  // of its first consumer (a group whose consumers' types differ in block size uses the first's).
  std::function<DType(const std::string& tensor)> type_of;
  // AWQ: the loss includes the runtime's int8 activation rounding (per 32-block, as the CPU kernels round
  // them): || X W^T - Qa(X diag(s)^-1) Q(W diag(s))^T ||^2, so scales that also tame activation outliers win.
  // Groups whose input width is not a multiple of 32 keep the weight-only loss.
  bool act_quant = false;
  // AWQ: alpha is chosen on the first half of the kept sample rows (an earlier stretch of the calibration text)
  // and folded only if it also beats no scales on the second half; groups with fewer than 2 * kMinHeldOutRows
  // kept rows search on all of them. false: chosen and accepted on one sample of all the rows.
  bool held_out = true;
};
constexpr int64_t kMinHeldOutRows = 32;

// The groups both methods fold into, per layer: attn_norm -> q,k,v; v -> o (only when n_kv_heads ==
// n_heads: with grouped-query attention v's rows do not map one to one onto o's columns; reported as
// skipped); ffn_norm -> gate,up; up -> down. Folding s: the preceding norm weight (or the preceding matrix's
// row c) is divided by s[c], column c of every consuming matrix multiplied by s[c], so the float model's
// outputs are unchanged up to rounding; the shared input statistics become those of x / s (sum_abs, sum_sq,
// max_abs, sample, xtx), so a later GPTQ sees the transformed inputs.

// AWQ: per input channel s = mean|x|^alpha (normalised by sqrt(max(s) min(s))), alpha on the grid,
// chosen per group to minimise || W X - Q(W diag(s)) diag(s)^-1 X ||^2 on the calibration sample (the
// group's matrices evaluated jointly, quantized with `type`: importance-weighted RTN with opts.weighted, the
// importance that of X / s), folded when alpha > 0 and (opts.held_out) it also wins on the held-out rows.
// Updates `m` and `stats` in place. Needs stats with sample rows.
std::vector<ScaleFold> awq_apply(FloatModel& m, CalibStats& stats, DType type, const ScaleSearchOptions& opts = {});

// SmoothQuant (W8A8): s = max|x|^alpha / max|w|^(1-alpha) per input channel, alpha on the grid chosen per
// group to minimise || W X - Q(W diag(s)) Qa(diag(s)^-1 X) ||^2 on the sample, Qa the runtime's dynamic
// int8 activation quantization (per 32-block, or per token), weights in `type` (Q8_0 for W8A8); folded like
// AWQ when the best alpha beats no scales.
std::vector<ScaleFold> smoothquant_apply(FloatModel& m, CalibStats& stats, DType type,
                                         const ScaleSearchOptions& opts = {});

}  // namespace tinfer

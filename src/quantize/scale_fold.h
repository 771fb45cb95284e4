// Internal: the groups AWQ and SmoothQuant fold per-channel scales into, the exact fold, and the float
// GEMM their losses use.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quant/type_table.h"
#include "quantize/calib_stats.h"
#include "quantize/float_model.h"
#include "quantize/methods.h"

namespace tinfer {

class ThreadPool;

namespace quantize_detail {

struct FoldGroup {
  std::string label;                   // "blk.3 attn_norm -> q,k,v"
  std::string prev;                    // receives 1/s: a norm weight (1-D) or a matrix's rows
  std::vector<std::string> consumers;  // receive s on their columns; all read the same input
  std::shared_ptr<InputStats> stats;   // that input
  std::string skip;                    // non-empty: the group cannot be folded (why)
};

// The groups of every layer in order (attn_norm -> q,k,v; v -> o; ffn_norm -> gate,up; up -> down).
std::vector<FoldGroup> fold_groups(const FloatModel& m, const CalibStats& stats);

// Folds s (one value per input channel of the group) into the model and rescales the input statistics.
void apply_fold(FloatModel& m, const FoldGroup& g, const std::vector<double>& s);

// The end of a scale search: folds `best` into the model when it is not empty and records the outcome in f
// (folded, or the note that no alpha beat the unscaled layer).
void fold_winner(FloatModel& m, const FoldGroup& g, const std::vector<double>& best, ScaleFold& f);

// The consumers' rows stacked: [rows][cols].
std::vector<float> stacked_weights(const FloatModel& m, const FoldGroup& g, int64_t& rows);

// y = x w^T: x [n][cols], w [rows][cols] (fp32 GEMM), y [n][rows].
void float_gemm(const float* w, int64_t rows, int64_t cols, const float* x, int64_t n, float* y, ThreadPool& pool);

// In place: each row of x [n][cols] replaced by its int8 reading, d = amax / 127 and q = round(x / d) per
// block of `block` values (kernels/ref: quantize_act_row): the runtime's dynamic activation quantization.
void fake_quant_act(float* x, int64_t n, int64_t cols, int64_t block);

// The group's sample rows the losses use (at most max_rows of the kept rows [first, end), evenly spread; max_rows
// 0 = all of them), as [n][cols]. The kept rows follow the calibration text, so [0, half) and [half, rows) are
// disjoint stretches of it.
std::vector<float> loss_sample(const InputStats& s, int64_t first, int64_t end, int64_t max_rows, int64_t& n);

double sum_squares(const std::vector<float>& y);  // in double, in order

// One group's scale search problem: the consumers' rows stacked, w [rows][cols]; the loss sample x [n][cols]
// (at most max_sample_rows); the float outputs y_ref = x w^T [n][rows] and ref = max(||y_ref||^2, 1e-30), which
// the losses are relative to.
struct FoldProblem {
  int64_t rows = 0, cols = 0, n = 0;
  std::vector<float> w, x, y_ref;
  double ref = 0;
};
// rows: which of the kept sample rows (all; the first half, on which a search fits; the second, held out).
enum class SampleRows { all, fit, held_out };
FoldProblem fold_problem(const FloatModel& m, const FoldGroup& g, int64_t max_sample_rows, ThreadPool& pool,
                         SampleRows rows = SampleRows::all);

// The runtime's output error for the scales s: q (W diag(s) quantized, `rows` rows of type tt) read back into deq,
// times int8(x / s) rounded per `act_block` values (into xs), into y: || y - y_ref ||^2. deq, xs, y: scratch of
// w's, x's and y_ref's sizes.
double act_quant_error(const FoldProblem& p, const TypeTraits& tt, const uint8_t* q, const std::vector<double>& s,
                       int64_t act_block, std::vector<float>& deq, std::vector<float>& xs, std::vector<float>& y,
                       ThreadPool& pool);

}  // namespace quantize_detail
}  // namespace tinfer

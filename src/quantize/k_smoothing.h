// K smoothing for a quantized KV cache: per-channel factors s (KvPrecision::k_smooth) calibrated on text.
// K has outlier channels (a few dimensions large in every token, after RoPE as before): with one scale per
// (token, kv head) they set the step for every other channel. Storing K / s and reading with q * s leaves q.k
// unchanged and gives K per-channel scaling on top of the per-token scales, SmoothQuant-style:
//   s_d = max|k_d|^alpha / max|q_d|^(1 - alpha)   (q over the kv head's query group; alpha = 1: s_d = max|k_d|)
// floored at `floor` x the head's largest factor (a channel silent in calibration must not blow up later),
// then normalised to geometric mean 1 per head (the absolute level cancels in the per-token scale).
#pragma once
#include <cstdint>
#include <vector>

namespace tinfer {

class Model;

struct KSmoothOptions {
  int64_t max_tokens = 4096;  // calibration tokens, in windows of ctx from position 0
  int64_t ctx = 512;
  double alpha = 1.0;
  double floor = 0.05;
  int threads = 0;
};

// The statistics: per layer, max |k_d| and max |q_d| over the calibration tokens ([kv_dim] each, q maxed over
// the query heads of each kv head's group).
struct QkAbsMax {
  std::vector<std::vector<float>> k, q;  // [n_layers][kv_dim]
};
QkAbsMax collect_qk_absmax(const Model& model, const std::vector<int32_t>& tokens, const KSmoothOptions& opts);

// [n_layers][kv_dim] factors from the statistics (see above). Pure.
std::vector<std::vector<float>> k_smoothing_factors(const QkAbsMax& stats, int64_t head_dim, double alpha, double floor);

}  // namespace tinfer

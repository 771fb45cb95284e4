// K smoothing's statistics and factors on any backend with the activation observer (quantize/k_smoothing.h runs
// them on a model's float image for `tinfer calibrate-kv`; backend/k_smoothing_at_load.h on the serving backend).
// K has outlier channels: with one scale per (token, kv head) they set the step for every other channel. Storing
// K / s and reading with q * s leaves q.k unchanged and gives K per-channel scaling on top of the per-token scales:
//   s_d = max|k_d|^alpha / max|q_d|^(1 - alpha)   (q over the kv head's query group; alpha = 1: s_d = max|k_d|)
// floored at `floor` x the head's largest factor (a channel silent in calibration must not blow up later),
// then normalised to geometric mean 1 per head (the absolute level cancels in the per-token scale).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace tinfer {

class Backend;

// Per layer, max |k_d| and max |q_d| over the calibration tokens ([kv_dim] each, q maxed over the query heads of
// each kv head's group), post-RoPE as the cache stores them.
struct QkAbsMax {
  std::vector<std::vector<float>> k, q;  // [n_layers][kv_dim]
};

// Runs `fwd` over tokens[0, total) as windows of ctx tokens, each one sequence from position 0 on an f32 cache
// of its own, in prefill chunks of `step` tokens; before each chunk, before_chunk(index of its first token,
// whether it starts a window). Calibration passes observe the forward through fwd's observer
// (BackendCapability::kActivationObserver).
void run_calibration_windows(Backend& fwd, const std::vector<int32_t>& tokens, int64_t total, int64_t ctx,
                             int64_t step, const std::function<void(int64_t, bool)>& before_chunk = {});

// The statistics over tokens[0, min(total, size)) in windows of ctx (capped at fwd.max_positions()). Sets fwd's
// linear observer for the run and clears it after. Error if fwd lacks the observer or tokens has fewer than 2.
QkAbsMax collect_qk_absmax(Backend& fwd, const std::vector<int32_t>& tokens, int64_t total, int64_t ctx);

// [n_layers][kv_dim] factors from the statistics (see above). Pure.
std::vector<std::vector<float>> k_smoothing_factors(const QkAbsMax& stats, int64_t head_dim, double alpha, double floor);

}  // namespace tinfer

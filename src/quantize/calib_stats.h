// Calibration statistics of the inputs of the linear layers, collected by running the float model on
// calibration text. Linear layers that read the same input share one InputStats:
//   q/k/v read the attention RMSNorm output, gate/up the FFN RMSNorm output, o the attention output,
//   down the SiLU(gate) * up product.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/k_smoothing_stats.h"  // run_calibration_windows

namespace tinfer {

class Backend;
class Model;

struct InputStats {
  int64_t cols = 0;      // input features
  int64_t n_tokens = 0;  // calibration tokens seen
  std::vector<double> xtx;      // [cols][cols]: sum over tokens of x x^T (the GPTQ Hessian, unnormalised)
  std::vector<double> sum_abs;  // [cols]: sum |x|  (AWQ: mean |x| per input channel)
  std::vector<double> sum_sq;   // [cols]: sum x^2  (importance-weighted RTN: per-column activation energy)
  std::vector<float> max_abs;   // [cols]: max |x| (SmoothQuant)
  std::vector<float> sample;    // [sample_rows][cols]: a fixed subsample of the inputs (AWQ / SmoothQuant losses)
  int64_t sample_rows = 0;
};

// Tensor name ("blk.L.attn_q.weight", ...) -> the statistics of its input (shared between the tensors
// that read the same input).
using CalibStats = std::map<std::string, std::shared_ptr<InputStats>>;

struct CalibOptions {
  int64_t max_tokens = 4096;   // calibration tokens (windows of ctx tokens)
  int64_t ctx = 512;           // window length
  int64_t sample_rows = 512;   // rows kept per input for the scale searches
  int threads = 0;             // 0 = hardware concurrency
  // Weight of each window's first token in X^T X only (the GPTQ Hessian; sum_abs / sum_sq / max_abs / sample
  // and n_tokens count it once). The first token is the attention sink: most heads put most of their
  // weight on its value vector, so an error there reaches every position, yet it is one row in ctx. With
  // weight 1 GPTQ on attn_v trades that row's error away (SmolLM2-135M, Q4_0, ctx 512: perplexity 31.1 with
  // GPTQ on v alone vs 27.5 with importance-weighted RTN).
  double first_token_weight = 1;
  // >= 0: gather the statistics of this layer only (the map holds its 7 tensors; sequential calibration).
  int64_t only_layer = -1;
};

// The model's float image: nullptr when `model` already computes its layer matrices (and, with_head, the
// embedding and output matrices) in float, else an in-memory copy with those matrices dequantized to F32 and
// every other tensor as it is. Without the head: calibration of the linear layers (the embedding lookup
// dequantizes rows exactly; no logits are needed). With it: logits free of int8 activation rounding.
std::unique_ptr<Model> float_image(const Model& model, bool with_head = false);

// Runs `model` in float over the first opts.max_tokens of `tokens` and gathers the statistics of every
// linear layer's input. Each window of opts.ctx tokens (capped at the model's context) is one sequence from
// position 0 (the caller puts a BOS where it wants one). The model is run by the CPU backend (a linear-input
// observer); a model with quantized layer matrices is first dequantized into an F32 image, so the
// activations are those of the dequantized float model. X^T X sums float products per chunk of tokens in
// double; the sample keeps sample_rows tokens spread evenly over the calibration tokens.
// Throws Error if there are fewer than 2 tokens.
CalibStats collect_calib_stats(const Model& model, const std::vector<int32_t>& tokens, const CalibOptions& opts);

}  // namespace tinfer

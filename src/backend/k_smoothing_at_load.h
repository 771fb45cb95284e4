// K smoothing at load: the default for a quantized K (`--kv-dtype int8` alone), without `tinfer calibrate-kv`.
// The factors (backend/k_smoothing_stats.h, alpha 0.5, floor 0.05: calibrate-kv's defaults) come from one short
// forward of the serving backend itself over a fixed built-in English text (~2 KB, a few hundred tokens in the
// model's own tokenizer), so they are deterministic for a model and cost one prefill of that text at start.
// Outlier K channels are a property of the weights (they show in every token), which is why a short generic
// text finds them; BENCHMARKS §2d measures it against the factors calibrated on 1,023 tokens of wikitext.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "tinfer/kv_precision.h"

namespace tinfer {

class Backend;
class Tokenizer;

// The built-in calibration text.
std::string_view k_smoothing_builtin_text();

// True when p quantizes some layer's K and carries no K smoothing factors.
bool wants_k_smoothing(const KvPrecision& p);

struct KSmoothingAtLoad {
  std::vector<std::vector<float>> factors;  // [n_layers][kv_dim]
  int64_t tokens = 0;                       // calibration tokens run
  double seconds = 0;                       // wall time of the pass
};
// The factors from fwd's forward over the built-in text (BOS first where the tokenizer adds one by default).
// Error if fwd lacks the activation observer.
KSmoothingAtLoad k_smoothing_at_load(Backend& fwd, const Tokenizer& tok);

// With wants_k_smoothing(p) and a backend with the activation observer: p.k_smooth = the factors (kept for layers whose K is quantized,
// empty elsewhere). Returns what was run, or nothing (tokens 0) when it did nothing.
KSmoothingAtLoad apply_k_smoothing_at_load(KvPrecision& p, Backend& fwd, const Tokenizer& tok);

}  // namespace tinfer

// The held-out choice of the AWQ methods: AWQ's per-group scale search minimises each fold group's output error
// in isolation, which does not always carry over end to end (on stories260K q4_0 both kinds of fold, attn_norm ->
// q,k,v and ffn_norm -> gate,up, each raise the held-out KLD a little with TinyStories calibration, though every
// group's own error falls). So the AWQ model is compared, on calibration text held out from the statistics, with
// the same method without AWQ's scales (awq: importance-weighted RTN; awq+gptq: GPTQ), and the one closer to the
// source is written: AWQ then never loses to its own baseline on that text.
#pragma once
#include <cstdint>
#include <vector>

#include "quantize/quantize_model.h"

namespace tinfer {

class Model;

// Mean KL(source || quant) over the next-token distributions of `tokens`, in windows of ctx from position 0
// (each window's first token predicts nothing), on the CPU backend's fast path with an f32 KV cache.
// Error if the vocabularies differ or tokens has fewer than 2.
double held_out_kl(const Model& source, const Model& quant, const std::vector<int32_t>& tokens, int64_t ctx,
                   int threads);

// quantize_tensors for an AWQ method with opts.held_out_tokens: both candidates quantized in memory, scored with
// held_out_kl, the closer one replayed into `out`; the result is that candidate's, with `held_out` filled in.
QuantizeResult quantize_choosing_on_held_out(const Model& source, const QuantizeOptions& opts, QuantizedSink& out);

}  // namespace tinfer

// Batch-1 generation on a Session: prefill the prompt, then sample and decode until the length
// cap, an end-of-generation token or the callback says stop. Used by run, chat and bench.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "tinfer/sampler.h"
#include "engine/session.h"

namespace tinfer {

class Tokenizer;

struct GenerateOptions {
  int64_t max_tokens = 128;
  SamplingParams sampling;
  bool stop_at_eog = true;  // false: ignore EOS (benchmarks generate a fixed count)
  int64_t prefill_chunk = 512;
};

struct GenerateStats {
  int64_t prompt_tokens = 0, generated = 0;
  double prefill_s = 0, decode_s = 0;  // decode_s covers tokens after the first
  double prefill_tok_s() const { return prefill_s > 0 ? prompt_tokens / prefill_s : 0; }
  double decode_tok_s() const { return decode_s > 0 && generated > 1 ? (generated - 1) / decode_s : 0; }
};

// on_token(token) returns false to stop early. The prompt is appended to whatever the session holds.
GenerateStats generate(Session& session, const Tokenizer& tok, const std::vector<int32_t>& prompt,
                       const GenerateOptions& opts, const std::function<bool(int32_t)>& on_token);

}  // namespace tinfer

// Requests at each stage: what a client asks for (GenerationRequest), what the scheduler is given once the
// request is resolved (RequestParams: final limits and stop ids), and the scheduler's own record (Request:
// token ids, prompt then outputs, how many have KV computed, and its lifecycle). No text here.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tinfer/sampler.h"
#include "tinfer/kv_types.h"
#include "tinfer/token_constraint.h"

namespace tinfer {

using RequestId = uint64_t;
using Token = kv::Token;

enum class RequestStatus { kWaiting, kRunning, kFinished };
enum class FinishReason { kNone, kStop, kLength, kAbort };

// "stop", "length", "abort" (OpenAI finish_reason spelling); "" for kNone.
inline const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kNone:
      break;
  }
  return "";
}

// Scheduling class. Background requests (long jobs) are admitted only while no interactive request
// waits and fewer than SchedulerConfig::max_background_running of them run, so a burst of them can hold
// at most that many batch seats and never sits ahead of interactive requests.
enum class Priority {
  kAuto,         // resolved by the output it asks for (RequestLimits::background_min_tokens)
  kInteractive,
  kBackground,
};

// What a client asks for; resolve_request() (tinfer/request_resolver.h) validates it once.
struct GenerationRequest {
  std::vector<Token> prompt;         // token ids (BOS included if wanted)
  SamplingParams sampling;
  int max_tokens = 0;                // <= 0: the engine's default; above the cap or the context: clamped
  std::vector<Token> stop_token_ids; // finish with "stop" when sampled (the token is kept in the output)
  bool ignore_eos = false;           // do not stop at the model's EOS/EOG ids
  int n = 1;                         // parallel samples sharing the prompt's KV blocks (forked after prefill)
  uint64_t cache_salt = 0;           // mixed into prefix-cache hashes: requests with different salts never share
  Priority priority = Priority::kAuto;
  bool speculative = true;           // false: never draft for this request, even when the engine speculates
  // Beam search (vLLM's old use_beam_search): n beams, n results best first, all reported when the request
  // ends. Needs temperature 0; never speculative. See engine/decoding/beam_search.h for the scoring.
  bool use_beam_search = false;
  float length_penalty = 1.0f;       // hypothesis score = cum_logprob / gen_len^length_penalty
  bool early_stopping = false;       // true: stop once n hypotheses exist; false: HF's heuristic
  // Routing between models asks the model how unsure it is. On: the prompt is prefilled without prefix-cache reuse,
  // so every prompt position's next-token distribution is computed, and their mean entropy (nats) is reported on
  // the request's events from the first token on (TokenEvent::prompt_entropy); every sampled token's event also
  // carries the entropy of the distribution it was drawn from (TokenEvent::entropy). Not with beam search.
  bool report_entropy = false;
  // Structured output: every sampled token is one the grammar allows (its mask is applied to the logits before
  // logit_bias, penalties and sampling). A completed grammar allows only the model's EOS/EOG ids, which then end the
  // request even with ignore_eos. Beam search keeps one position per beam.
  std::shared_ptr<const TokenGrammar> grammar;
};

// A resolved request as the scheduler takes it: every limit final (see ResolvedRequest).
struct RequestParams {
  std::vector<Token> prompt;          // non-empty, shorter than the scheduler's max_len
  int max_tokens = 1;                 // >= 1: outputs allowed (the context may end the request first)
  std::vector<Token> stop_ids;        // finish with "stop" when sampled: the resolved EOS and stop ids
  uint64_t cache_salt = 0;
  Priority priority = Priority::kInteractive;
  // Logits of every prompt row (GenerationRequest::report_entropy): the prompt is prefilled whole, never from the
  // prefix cache, until the first output exists.
  bool prompt_logits = false;
};

struct Request {
  RequestId id = 0;
  std::vector<Token> tokens;  // prompt then sampled outputs; positions 0..size-1
  int num_prompt_tokens = 0;
  int num_computed_tokens = 0;       // positions whose KV is in the cache
  int num_cached_prompt_tokens = 0;  // prefix-cache hit at the latest admission
  int max_tokens = 0;                // output limit
  std::vector<Token> stop_ids;
  uint64_t cache_salt = 0;
  Priority priority = Priority::kInteractive;
  bool prompt_logits = false;  // RequestParams::prompt_logits
  RequestStatus status = RequestStatus::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;
  int num_preemptions = 0;
  uint64_t admit_order = 0;  // larger = admitted more recently; the newest running one is preempted first

  int num_output_tokens() const { return static_cast<int>(tokens.size()) - num_prompt_tokens; }
  int num_tokens() const { return static_cast<int>(tokens.size()); }
  std::vector<Token> output_tokens() const { return {tokens.begin() + num_prompt_tokens, tokens.end()}; }
};

}  // namespace tinfer

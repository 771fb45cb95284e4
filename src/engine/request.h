// A request as the scheduler sees it: token ids (prompt, then outputs), how many have KV computed, limits and
// stop conditions, and its lifecycle. No sampling parameters or text here: the engine keeps those by id.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kvcache/types.h"

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

// What a client asks for; validated and resolved into a Request by Scheduler::add().
struct RequestParams {
  std::vector<Token> prompt;          // non-empty
  int max_tokens = 0;                 // <= 0: the server default; above the server cap: clamped (flagged)
  std::vector<Token> stop_token_ids;  // finish with "stop" when sampled (the token is kept in the output)
  bool ignore_eos = false;            // do not stop at the model's EOS/EOG ids
  uint64_t cache_salt = 0;            // mixed into prefix-cache hashes: requests with different salts never share
};

struct Request {
  RequestId id = 0;
  std::vector<Token> tokens;  // prompt then sampled outputs; positions 0..size-1
  int num_prompt_tokens = 0;
  int num_computed_tokens = 0;       // positions whose KV is in the cache
  int num_cached_prompt_tokens = 0;  // prefix-cache hit at the latest admission
  int max_tokens = 0;                // resolved output limit
  bool clamped = false;              // the asked max_tokens exceeded the server cap
  std::vector<Token> stop_token_ids;
  bool ignore_eos = false;
  uint64_t cache_salt = 0;
  RequestStatus status = RequestStatus::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;
  int num_preemptions = 0;
  uint64_t admit_order = 0;  // larger = admitted more recently; the newest running one is preempted first

  int num_output_tokens() const { return static_cast<int>(tokens.size()) - num_prompt_tokens; }
  int num_tokens() const { return static_cast<int>(tokens.size()); }
  std::vector<Token> output_tokens() const { return {tokens.begin() + num_prompt_tokens, tokens.end()}; }
};

}  // namespace tinfer

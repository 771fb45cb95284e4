// One place resolves a request: the output limit (default, server cap, room left after the prompt), the
// stop ids (the model's EOS/EOG unless ignore_eos, plus the request's own), the priority class, and every
// validity check against the engine's limits. The engine and scheduler consume only the resolved value;
// the HTTP server maps JSON to a GenerationRequest and RequestError back to a 400.
#pragma once
#include <string>
#include <vector>

#include "tinfer/error.h"
#include "tinfer/request.h"
#include "tinfer/sampler.h"

namespace tinfer {

// What a request is resolved against: the engine's configuration and the model.
struct RequestLimits {
  int n_vocab = 0;
  int max_len = 0;                  // prompt + outputs: min(max_model_len, KV capacity in tokens)
  int max_seqs = 1;                 // bound on n
  int default_max_tokens = 256;     // when a request asks for none
  int max_tokens_cap = 4096;        // larger asks are clamped (and flagged)
  int background_min_tokens = 0;    // kAuto requests asking for more output than this run in the background
                                    // class (0: none do)
  std::vector<Token> eos_ids;       // the model's end-of-generation ids
};

// A request the engine cannot serve. field: the request field at fault ("prompt", "n", "max_tokens", ...;
// "" when none); code: a stable machine-readable reason ("context_length_exceeded", "invalid_value").
class RequestError : public Error {
 public:
  RequestError(const std::string& msg, std::string field, std::string code)
      : Error(msg), field_(std::move(field)), code_(std::move(code)) {}
  const std::string& field() const { return field_; }
  const std::string& code() const { return code_; }

 private:
  std::string field_, code_;
};

// A validated request. Only resolve_request() makes one, so a value of this type is always valid.
struct ResolvedRequest {
  std::vector<Token> prompt;         // non-empty, ids in the vocabulary, shorter than max_len
  SamplingParams sampling;           // validated
  int n = 1;                         // in [1, max_seqs]
  int max_tokens = 0;                // final output limit: >= 1, <= the cap, fits after the prompt
  bool clamped = false;              // an explicit max_tokens was lowered to the cap
  std::vector<std::string> warnings; // one line per clamp (cap, context), for the client
  std::vector<Token> stop_ids;       // finish with "stop" when sampled: EOS (unless ignore_eos) + stop_token_ids
  uint64_t cache_salt = 0;
  Priority priority = Priority::kInteractive;  // kAuto resolved
  bool speculative = true;           // false for beam search
  bool use_beam_search = false;      // n = the beam width (temperature 0, checked)
  float length_penalty = 1.0f;       // finite
  bool early_stopping = false;
  bool report_entropy = false;  // GenerationRequest::report_entropy (never with beam search)
  std::shared_ptr<const TokenGrammar> grammar;  // GenerationRequest::grammar

 private:
  ResolvedRequest() = default;
  friend ResolvedRequest resolve_request(GenerationRequest req, const RequestLimits& limits);
};

// Throws RequestError for the first problem found (message, field and code).
ResolvedRequest resolve_request(GenerationRequest req, const RequestLimits& limits);

}  // namespace tinfer

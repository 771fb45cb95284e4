// resolve_request: every check and default a request gets, in one pass, against RequestLimits.
#include "tinfer/request_resolver.h"

#include <algorithm>
#include <cmath>

namespace tinfer {

namespace {

[[noreturn]] void reject(const std::string& msg, const char* field, const char* code = "invalid_value") {
  throw RequestError(msg, field, code);
}

}  // namespace

ResolvedRequest resolve_request(GenerationRequest req, const RequestLimits& lim) {
  if (auto errs = req.sampling.validate(); !errs.empty()) {
    std::string msg = "invalid sampling parameters:";
    for (const auto& e : errs) msg += " " + e + ";";
    msg.pop_back();
    reject(msg, "");
  }
  if (req.prompt.empty()) reject("the prompt is empty (no tokens)", "prompt");
  for (size_t i = 0; i < req.prompt.size(); ++i)
    if (req.prompt[i] < 0 || req.prompt[i] >= lim.n_vocab)
      reject("prompt[" + std::to_string(i) + "] = " + std::to_string(req.prompt[i]) +
                 " is not a token id (vocabulary size " + std::to_string(lim.n_vocab) + ")",
             "prompt");
  const int n_prompt = static_cast<int>(req.prompt.size());
  if (n_prompt >= lim.max_len)
    reject("this model's maximum context length is " + std::to_string(lim.max_len) + " tokens, but the prompt has " +
               std::to_string(n_prompt) + " tokens (no room for output)",
           "prompt", "context_length_exceeded");
  if (req.n < 1 || req.n > lim.max_seqs)
    reject("n must be in [1, " + std::to_string(lim.max_seqs) + "] (the engine's max_seqs), got " +
               std::to_string(req.n),
           "n");
  if (req.use_beam_search && req.report_entropy)
    reject("beam search does not report entropies (routing measures sampled requests only)", "use_beam_search");
  if (req.use_beam_search) {
    if (!req.sampling.greedy())
      reject("beam search is deterministic: temperature must be 0, got " + std::to_string(req.sampling.temperature),
             "temperature");
    if (!std::isfinite(req.length_penalty))
      reject("length_penalty must be a finite number, got " + std::to_string(req.length_penalty), "length_penalty");
    if (req.sampling.top_logprobs > 0)
      reject("top_logprobs is not available with beam search (each token's own logprob is, with logprobs)",
             "top_logprobs");
  }
  for (const auto& [t, bias] : req.sampling.logit_bias)
    if (t < 0 || t >= lim.n_vocab)
      reject("logit_bias names token " + std::to_string(t) + ", outside the vocabulary (size " +
                 std::to_string(lim.n_vocab) + ")",
             "logit_bias");
  for (Token t : req.stop_token_ids)
    if (t < 0 || t >= lim.n_vocab) reject("stop token id " + std::to_string(t) + " is outside the vocabulary", "stop_token_ids");

  ResolvedRequest r;
  const bool asked = req.max_tokens > 0;
  int mt = asked ? req.max_tokens : lim.default_max_tokens;
  if (mt > lim.max_tokens_cap) {
    r.warnings.push_back("max_tokens " + std::to_string(mt) + " exceeds the server cap; clamped to " +
                         std::to_string(lim.max_tokens_cap));
    mt = lim.max_tokens_cap;
    r.clamped = asked;  // only an explicit ask is reported as clamped
  }
  const int room = lim.max_len - n_prompt;
  if (mt > room) {
    r.warnings.push_back("max_tokens " + std::to_string(mt) + " does not fit the context after the prompt; clamped to " +
                         std::to_string(room));
    mt = room;
  }
  r.max_tokens = mt;
  if (!req.ignore_eos || req.grammar) r.stop_ids = lim.eos_ids;  // a completed grammar allows only these
  for (Token t : req.stop_token_ids)
    if (std::find(r.stop_ids.begin(), r.stop_ids.end(), t) == r.stop_ids.end()) r.stop_ids.push_back(t);
  r.priority = req.priority;
  r.speculative = req.speculative && !req.use_beam_search;  // beams are never drafted for
  r.use_beam_search = req.use_beam_search;
  r.report_entropy = req.report_entropy;
  r.grammar = std::move(req.grammar);
  r.length_penalty = req.length_penalty;
  r.early_stopping = req.early_stopping;
  if (r.priority == Priority::kAuto)
    r.priority = lim.background_min_tokens > 0 && mt > lim.background_min_tokens ? Priority::kBackground
                                                                                 : Priority::kInteractive;
  r.prompt = std::move(req.prompt);
  r.sampling = std::move(req.sampling);
  r.n = req.n;
  r.cache_salt = req.cache_salt;
  return r;
}

}  // namespace tinfer

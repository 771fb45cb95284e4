// Batch-1 generation loop with timing split into prefill and decode.
#include "engine/generate.h"

#include "tinfer/error.h"
#include "core/timer.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer {

GenerateStats generate(Session& session, const Tokenizer& tok, const std::vector<int32_t>& prompt,
                       const GenerateOptions& opts, const std::function<bool(int32_t)>& on_token) {
  check(!prompt.empty(), "generation needs at least one prompt token (BOS)");
  const int64_t room = session.max_ctx() - session.n_past() - int64_t(prompt.size());
  check(room >= 0, "prompt of " + std::to_string(prompt.size()) + " tokens does not fit the context of " +
                       std::to_string(session.max_ctx()) + " tokens (" + std::to_string(session.n_past()) +
                       " already used)");
  GenerateStats st;
  st.prompt_tokens = int64_t(prompt.size());
  Sampler sampler(opts.sampling, int32_t(tok.n_vocab()), prompt);
  double t0 = now_s();
  const std::vector<float>* logits = &session.feed(prompt, opts.prefill_chunk);
  st.prefill_s = now_s() - t0;
  const int64_t limit = std::min(opts.max_tokens, room);
  double t1 = 0;
  for (int64_t i = 0; i < limit; ++i) {
    int32_t next = sampler.sample(logits->data()).token;
    sampler.accept(next);
    ++st.generated;
    if (opts.stop_at_eog && tok.is_eog(next)) break;
    if (!on_token(next)) break;
    if (i + 1 == limit || session.n_past() >= session.max_ctx()) break;
    if (i == 0) t1 = now_s();
    logits = &session.feed_token(next);
  }
  if (t1 > 0) st.decode_s = now_s() - t1;
  return st;
}

}  // namespace tinfer

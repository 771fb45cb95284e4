// BeamStrategy: beam search in the engine step (see beam_strategy.h).
#include "engine/decoding/beam_strategy.h"

#include <algorithm>

#include "engine/live_request.h"

namespace tinfer {

BeamStrategy::BeamStrategy(LiveRequest& live, int n_vocab, Scheduler& sched, SeqRegistry& seqs)
    : live_(live),
      group_(live.req, n_vocab, sched,
             BeamGroup::Hooks{.new_seq = [lp = &live, sp = &seqs] { return sp->open(*lp); },
                              .drop_seq = [sp = &seqs](kv::SeqId seq) { sp->close(seq); }}) {}

void BeamStrategy::on_row(const PlanRow& row, StepRows&) {
  if (!row.logits) return;
  group_.on_row(row.s.id, row.logits);
  rows_.emplace_back(row.i, row.s.id);
}

void BeamStrategy::decide(StepRows& rows) {
  group_.decide();
  for (const auto& [i, seq] : rows_)  // (sequences the round dropped commit nothing)
    if (auto t = group_.commit(seq)) rows.committed[i] = {*t};
  rows_.clear();
}

void BeamStrategy::on_output(const RequestOutput& out, std::span<const SampleResult>) {
  cached_ = std::max(cached_, out.num_cached_prompt_tokens);  // beams report only their final hypotheses
}

void BeamStrategy::after_update() {
  group_.after_update();
  if (!group_.done()) return;
  // The n best hypotheses, best first, as sample indices 0..n-1: one event per token, the last one finishing.
  const std::vector<Hypothesis> hyps = group_.results();
  for (int k = 0; k < live_.req.n; ++k) {
    if (k >= static_cast<int>(hyps.size())) {  // fewer hypotheses than beams (every candidate stopped early)
      live_.emit(k, nullptr, true, FinishReason::kStop, cached_);
      continue;
    }
    const Hypothesis& h = hyps[size_t(k)];
    for (size_t t = 0; t < h.tokens.size(); ++t) {
      const bool last = t + 1 == h.tokens.size();
      SampleResult r;
      r.token = h.tokens[t];
      r.logprob = h.token_logprobs[t];
      live_.emit(k, &r, last, last ? (h.stopped ? FinishReason::kStop : FinishReason::kLength) : FinishReason::kNone,
                 cached_, &h);
    }
  }
}

void BeamStrategy::abort() {
  group_.abort_all();  // every beam's blocks return now
  for (int k = 0; k < live_.req.n; ++k)
    if (!live_.sample_done(k)) live_.emit(k, nullptr, true, FinishReason::kAbort, 0);
}

}  // namespace tinfer

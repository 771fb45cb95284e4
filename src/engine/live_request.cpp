// LiveRequest: the events of one request (see live_request.h).
#include "engine/live_request.h"

namespace tinfer {

LiveRequest::LiveRequest(ResolvedRequest r, EventCallback on_event, int64_t* generated)
    : req(std::move(r)), on_event_(std::move(on_event)), generated_(generated) {
  completion_.assign(size_t(req.n), 0);
  done_.assign(size_t(req.n), false);
  if (req.report_entropy) entropy.emplace(req.prompt.size());
}

void LiveRequest::emit(int index, const SampleResult* s, bool finished, FinishReason why, int cached,
                       const Hypothesis* beam) {
  TokenEvent ev;
  ev.id = id;
  ev.index = index;
  if (s) {
    ev.has_token = true;
    ev.token = s->token;
    ev.logprob = s->logprob;
    ev.top_logprobs = s->top;
    ev.entropy = s->entropy;
    ++completion_[size_t(index)];
    ++*generated_;
  }
  ev.finished = finished;
  ev.finish_reason = why;
  ev.prompt_tokens = static_cast<int>(req.prompt.size());
  ev.cached_prompt_tokens = cached;
  ev.completion_tokens = completion_[size_t(index)];
  ev.clamped = req.clamped;
  if (entropy) ev.prompt_entropy = entropy->prompt_mean();
  if (beam) {
    ev.beam = true;
    ev.beam_logprob = beam->logprob;
    ev.beam_score = beam->score;
  }
  if (finished && !done_[size_t(index)]) {
    done_[size_t(index)] = true;
    ++num_done_;
  }
  if (on_event_) on_event_(ev);
}

}  // namespace tinfer

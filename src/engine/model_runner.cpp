// ModelRunner: BatchPlan -> CoW copies -> ForwardBatch -> Backend::forward -> logit rows.
#include "engine/model_runner.h"

#include "tinfer/error.h"

namespace tinfer {

void ModelRunner::run(const BatchPlan& plan) {
  // Shared blocks about to be written were replaced by fresh ones: fill them before anyone writes.
  for (const ScheduledRequest& s : plan.requests)
    for (const kv::CowCopy& c : s.copies) kv_.copy_block(c.src, c.dst, c.group);

  batch_.clear();
  // With a sliding-window pool every request has a window table (the scheduler and policies set them together):
  // one missing would shift the per-sequence index.
  const bool windows = !plan.requests.empty() && !plan.requests[0].window_table.empty();
  row_.assign(plan.requests.size(), -1);
  prompt_row_.assign(plan.requests.size(), -1);
  for (size_t i = 0; i < plan.requests.size(); ++i) {
    const ScheduledRequest& s = plan.requests[i];
    const int32_t seq = static_cast<int32_t>(batch_.block_tables.size());
    batch_.block_tables.emplace_back(s.block_table.begin(), s.block_table.end());
    if (windows) {
      check(!s.window_table.empty(), "model runner: a request without a window table in a batch that has them");
      batch_.window_tables.emplace_back(s.window_table.begin(), s.window_table.end());
    }
    batch_.may_exit.push_back(s.decode && !s.padding ? 1 : 0);
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      batch_.tokens.push_back(s.tokens[t]);
      batch_.positions.push_back(s.start_pos + static_cast<int32_t>(t));
      batch_.seq.push_back(seq);
    }
    if (s.prompt_logits) {  // every token of the prompt chunk; the last is the sampling row when it samples
      const int32_t end = static_cast<int32_t>(batch_.tokens.size());
      const int32_t first = end - static_cast<int32_t>(s.tokens.size());
      prompt_row_[i] = static_cast<int>(batch_.logit_rows.size());
      for (int32_t r = first; r < end; ++r) batch_.logit_rows.push_back(r);
      if (s.needs_logits) row_[i] = prompt_row_[i] + static_cast<int>(s.tokens.size()) - 1;
    } else if (s.needs_logits) {  // the chunk's last known token, then every draft
      row_[i] = static_cast<int>(batch_.logit_rows.size());
      const int32_t end = static_cast<int32_t>(batch_.tokens.size());
      for (int32_t r = end - s.num_logits(); r < end; ++r) batch_.logit_rows.push_back(r);
    }
  }
  n_vocab_ = static_cast<size_t>(fwd_.config().n_vocab);
  logits_.resize(batch_.logit_rows.size() * n_vocab_);
  fwd_.forward(batch_, kv_, logits_.data());
}

}  // namespace tinfer

// ModelRunner: executes one BatchPlan on a Backend: copy-on-write block copies first, then every
// scheduled token of every request as one ragged ForwardBatch, logits only for requests that sample (one row,
// or with speculative drafts one row per draft more; every row of a prompt chunk whose request reports its entropy).
#pragma once
#include <vector>

#include "engine/scheduler.h"
#include "backend/backend.h"
#include "backend/forward_batch.h"

namespace tinfer {

class ModelRunner {
 public:
  ModelRunner(Backend& backend, KvCache& kv) : fwd_(backend), kv_(kv) {}

  // Runs the plan. Afterwards logits(i) is plan.requests[i]'s first of num_logits() consecutive [n_vocab] rows
  // (the last known token's, then each draft's), or nullptr without logits.
  void run(const BatchPlan& plan);
  const float* logits(size_t i) const { return row_[i] < 0 ? nullptr : &logits_[size_t(row_[i]) * n_vocab_]; }
  // A prompt_logits chunk: the first of plan.requests[i].tokens.size() consecutive rows, one per token of the chunk
  // (the last is logits(i) when the chunk samples); nullptr for other requests.
  const float* prompt_logits(size_t i) const {
    return prompt_row_[i] < 0 ? nullptr : &logits_[size_t(prompt_row_[i]) * n_vocab_];
  }
  size_t n_vocab() const { return n_vocab_; }

 private:
  Backend& fwd_;
  KvCache& kv_;
  ForwardBatch batch_;
  std::vector<int> row_;        // [plan.requests.size()] logit row or -1
  std::vector<int> prompt_row_;  // [plan.requests.size()] first of a prompt_logits chunk's rows or -1
  std::vector<float> logits_;   // [rows][n_vocab]
  size_t n_vocab_ = 0;
};

}  // namespace tinfer

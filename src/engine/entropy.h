// Entropy of a next-token distribution given its logits: what routing between models reads as a model's
// uncertainty (the prompt's mean over its rows, and each sampled token's own).
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/batch_plan.h"

namespace tinfer {

// H(softmax(logits)) in nats. `scratch` is resized to n and overwritten (callers reuse one per thread).
// Uses the vectorized softmax and dot kernels: H = lse - sum_i p_i x_i, with lse = x_max - log p_max.
float next_token_entropy(const float* logits, int64_t n, std::vector<float>& scratch);

// A report_entropy request's prompt side: each prompt position's next-token entropy (a preempted prefill rewrites
// its rows), and their mean once the prompt's last row is known (the value every event of the request carries).
class RequestEntropy {
 public:
  explicit RequestEntropy(size_t prompt_len) : rows_(prompt_len, std::numeric_limits<float>::quiet_NaN()) {}
  // A prompt_logits chunk's rows: s.tokens.size() rows of [n_vocab], one per token of the chunk.
  void prompt_chunk(const ScheduledRequest& s, const float* rows, int64_t n_vocab, std::vector<float>& scratch);
  float prompt_mean() const { return mean_; }  // NaN until the last prompt row is in

 private:
  std::vector<float> rows_;
  float mean_ = std::numeric_limits<float>::quiet_NaN();
};

}  // namespace tinfer

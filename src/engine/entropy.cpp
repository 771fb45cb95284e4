// next_token_entropy: one softmax and one dot product on the active ISA's kernels, because a prompt chunk asks for
// up to max_batched_tokens rows of n_vocab each and a scalar std::exp loop is not vectorized.
#include "engine/entropy.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"

namespace tinfer {

float next_token_entropy(const float* logits, int64_t n, std::vector<float>& scratch) {
  if (n <= 1) return 0.0f;
  scratch.assign(logits, logits + n);
  const int64_t top = std::max_element(logits, logits + n) - logits;
  softmax_inplace(scratch.data(), n);
  // -sum p log p = -sum p (x - lse) = lse - sum p x; lse from the largest probability (least rounding).
  const double lse = double(logits[top]) - std::log(double(scratch[size_t(top)]));
  const double h = lse - double(dot_f32(scratch.data(), logits, n));
  return static_cast<float>(std::max(h, 0.0));
}

void RequestEntropy::prompt_chunk(const ScheduledRequest& s, const float* rows, int64_t n_vocab,
                                  std::vector<float>& scratch) {
  for (size_t t = 0; t < s.tokens.size(); ++t)
    rows_.at(size_t(s.start_pos) + t) = next_token_entropy(rows + int64_t(t) * n_vocab, n_vocab, scratch);
  if (!s.needs_logits) return;  // the prompt's last row is not computed yet
  double sum = 0;
  for (float h : rows_) sum += h;
  mean_ = static_cast<float>(sum / double(rows_.size()));
}

}  // namespace tinfer

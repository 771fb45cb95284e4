// Entropy of a next-token distribution given its logits: what routing between models reads as a model's
// uncertainty (the prompt's mean over its rows, and each sampled token's own).
#pragma once
#include <cstdint>
#include <vector>

namespace tinfer {

// H(softmax(logits)) in nats. `scratch` is resized to n and overwritten (callers reuse one per thread).
// Uses the vectorized softmax and dot kernels: H = lse - sum_i p_i x_i, with lse = x_max - log p_max.
float next_token_entropy(const float* logits, int64_t n, std::vector<float>& scratch);

}  // namespace tinfer

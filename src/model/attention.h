// Paged, flash-style attention: for each query token, stream its sequence's KV blocks as tiles,
// keep a running max and sum (online softmax), never materialise the full score matrix.
#pragma once
#include <cstdint>
#include <vector>

#include "model/forward_batch.h"
#include "model/kv_storage.h"

namespace tinfer {

class ThreadPool;

struct AttentionShape {
  int64_t n_heads, n_kv_heads, head_dim;
};

// q: rows of q_stride floats starting with n_heads*head_dim rotated values; out: [n][n_heads*head_dim]. Token i attends to
// positions 0..positions[i] of its sequence; those K/V must already be in `kv` for `layer`.
void paged_attention(const AttentionShape& s, const ForwardBatch& batch, const KvStorage& kv, int64_t layer,
                     const float* q, int64_t q_stride, float* out, ThreadPool& pool);

}  // namespace tinfer

// A decode-shaped batch for the fused-step tests: `seqs` sequences of one token each at position `pos`, every
// sequence with its own run of KV blocks, logits for every row (the engine's batched decode step).
#pragma once
#include <numeric>

#include "backend/forward_batch.h"

namespace tinfer::forward_test {

inline ForwardBatch decode_batch(int seqs, int pos, int blocks_per_seq, int vocab, int salt) {
  ForwardBatch b;
  for (int s = 0; s < seqs; ++s) {
    b.tokens.push_back((s * 53 + salt * 7 + 5) % vocab);
    b.positions.push_back(pos);
    b.seq.push_back(s);
    b.block_tables.emplace_back(blocks_per_seq);
    std::iota(b.block_tables.back().begin(), b.block_tables.back().end(), s * blocks_per_seq);
    b.logit_rows.push_back(s);
  }
  return b;
}

}  // namespace tinfer::forward_test

// ForwardBatch: one step's work for the fast forward pass, as plain data. Tokens of several
// sequences (decode tokens and prefill chunks alike) form one ragged batch; each token names its
// sequence, whose block table maps positions to KV blocks (position p -> block_table[p / block_size]).
#pragma once
#include <cstdint>
#include <vector>

namespace tinfer {

struct ForwardBatch {
  std::vector<int32_t> tokens;     // [n] token ids
  std::vector<int32_t> positions;  // [n] position of each token in its sequence
  std::vector<int32_t> seq;        // [n] index into block_tables
  std::vector<std::vector<int32_t>> block_tables;  // per sequence: KV block ids covering its positions
  // Per sequence, when the cache keeps the sliding-window layers in a pool of their own (KV group 1): their
  // block ids (kNoBlock = -1 before the window); empty otherwise.
  std::vector<std::vector<int32_t>> window_tables;
  std::vector<int32_t> logit_rows;  // indices into tokens whose logits are wanted, in output order
  // Run only the first n_layers decoder layers, then the final norm and the head (self-speculative drafting:
  // the target's own early layers as its draft); 0 = every layer. The cache must hold at least that many.
  int32_t n_layers = 0;
  // Early exit (tinfer/early_exit.h): per sequence, 1 when its row is a lone decode token that may leave the step
  // early (the caller knows what is a prompt); empty: no row may exit.
  std::vector<uint8_t> may_exit;

  void clear() {
    tokens.clear(), positions.clear(), seq.clear(), block_tables.clear(), window_tables.clear(), logit_rows.clear();
    may_exit.clear();
    n_layers = 0;
  }
};

}  // namespace tinfer

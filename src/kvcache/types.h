// Plain ids shared by the KV-cache layer and the scheduler: tokens, blocks, sequences, block hashes,
// and the copy-on-write instruction handed to whoever owns the KV tensors.
#pragma once
#include <cstdint>

namespace tinfer::kv {

using Token = int32_t;    // vocabulary id
using BlockId = int32_t;  // index into the block pool, 0..num_blocks-1
using SeqId = uint64_t;   // one sequence (a request, or one fork of it)
using BlockHash = uint64_t;

constexpr BlockId kNoBlock = -1;

// Before the step's forward pass, copy every layer's K and V of block `src` into block `dst`.
struct CowCopy {
  BlockId src = kNoBlock;
  BlockId dst = kNoBlock;
  bool operator==(const CowCopy&) const = default;
};

}  // namespace tinfer::kv

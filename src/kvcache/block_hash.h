// Chained hash of one full KV block: hash(parent block's hash, the block's token ids, extra key such as a cache
// salt). Injectable (a plain function type) so tests can force collisions.
#pragma once
#include <functional>
#include <span>

#include "tinfer/kv_types.h"

namespace tinfer::kv {

// parent is 0 for the first block of a sequence.
using BlockHashFn = std::function<BlockHash(BlockHash parent, std::span<const Token> tokens, uint64_t extra_key)>;

// Default: 64-bit FNV-1a over (parent, extra_key, tokens) followed by a splitmix64 finaliser.
BlockHash default_block_hash(BlockHash parent, std::span<const Token> tokens, uint64_t extra_key);

}  // namespace tinfer::kv

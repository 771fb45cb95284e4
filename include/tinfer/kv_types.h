// Plain ids shared by the KV-cache layer and the scheduler: tokens, blocks, sequences, block hashes,
// and the copy-on-write instruction handed to whoever owns the KV tensors.
#pragma once
#include <cstdint>
#include <string_view>

namespace tinfer::kv {

using Token = int32_t;    // vocabulary id
using BlockId = int32_t;  // index into the block pool, 0..num_blocks-1
using SeqId = uint64_t;   // one sequence (a request, or one fork of it)
using BlockHash = uint64_t;

constexpr BlockId kNoBlock = -1;

// Before the step's forward pass, copy every layer's K and V of block `src` into block `dst` (of the layers of
// KV group `group`: kv_cache_groups.h; 0 when there is one).
struct CowCopy {
  BlockId src = kNoBlock;
  BlockId dst = kNoBlock;
  int group = 0;
  bool operator==(const CowCopy&) const = default;
};

// Paged: blocks allocated as tokens arrive. Reserved (baseline): a sequence's whole reservation up front.
enum class KvLayout { kPaged, kReserved };
inline const char* kv_layout_name(KvLayout l) { return l == KvLayout::kReserved ? "reserved" : "paged"; }
// "paged" | "reserved"; false for anything else.
inline bool parse_kv_layout(std::string_view s, KvLayout* out) {
  if (s == "paged") return *out = KvLayout::kPaged, true;
  if (s == "reserved") return *out = KvLayout::kReserved, true;
  return false;
}

}  // namespace tinfer::kv

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

// Which free block allocate() hands out first: one freed earlier, or one never handed out ("untouched": its
// KV memory may never have been written). The first write to an untouched block's pages costs a page fault and
// a zeroed page per 4 KiB, paid inside a forward; where a VM's host backs guest memory lazily that is ~5 ms per
// MiB (BENCHMARKS §1ad), 12% of a served c=32 step while the arena grows.
enum class ReuseOrder : uint8_t {
  // Freed blocks first (least recently freed first, a cached one evicted), untouched ones only when none is
  // free: the touched part of the arena grows only to the peak the running sequences need, and the prefix
  // cache lives in it. The default.
  kResidentFirst,
  // vLLM's order: every untouched block before any freed one, so cached blocks are evicted only once the whole
  // arena has been used (its resident memory then is the whole arena).
  kFreshFirst,
};

inline const char* reuse_order_name(ReuseOrder o) { return o == ReuseOrder::kFreshFirst ? "fresh" : "resident"; }
// "resident" | "fresh"; false for anything else.
inline bool parse_reuse_order(std::string_view s, ReuseOrder* out) {
  if (s == "resident") return *out = ReuseOrder::kResidentFirst, true;
  if (s == "fresh") return *out = ReuseOrder::kFreshFirst, true;
  return false;
}

}  // namespace tinfer::kv

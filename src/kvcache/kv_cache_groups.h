// KV cache groups: layers that keep different spans of a sequence keep them in different block pools, each with
// its own block table per sequence (the idea of vLLM's hybrid allocator, with one pool per group): full-attention
// layers hold every position, sliding-window layers (Gemma 3's local layers) only their window, so a long context
// costs the window there, not the context. Every operation is KvCacheManager's, applied to each group, all or
// nothing; a prefix hit is the run of leading blocks every group still has. Knows nothing of models.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kvcache/kv_cache_manager.h"

namespace tinfer::kv {

// One group's pool: its size and its window (0 = full attention).
struct KvGroupSpec {
  int num_blocks = 0;
  int window_tokens = 0;
};

class KvCacheGroups {
 public:
  // One group, exactly the manager `config` describes.
  KvCacheGroups(KvCacheConfig config);  // (implicit: a plain config is the one-group cache)
  // One group per spec (group 0 first); the rest of `config` (block size, prefix caching, layout, hash) is shared.
  KvCacheGroups(KvCacheConfig config, std::span<const KvGroupSpec> groups);

  int num_groups() const { return static_cast<int>(groups_.size()); }
  const KvCacheManager& group(int g) const { return groups_.at(static_cast<size_t>(g)); }
  // Tokens one sequence can grow to: the smallest full-attention group's pool; unbounded (INT64_MAX) when every
  // group is windowed, since each then holds a window per sequence whatever the length.
  int64_t token_capacity() const;

  // Group 0's hit cut to the blocks every group has, with theirs in PrefixHit::group_blocks.
  PrefixHit match_prefix(std::span<const Token> tokens, uint64_t extra_key, int max_tokens) const;
  void record_prefix_query(int query_tokens, int hit_tokens) { groups_[0].record_prefix_query(query_tokens, hit_tokens); }
  bool can_allocate(SeqId seq, const AllocRequest& r) const;
  // Every group grows, or none does (false). CoW copies name their group.
  bool allocate(SeqId seq, const AllocRequest& r, std::vector<CowCopy>* cow);
  void commit(SeqId seq, std::span<const Token> tokens, int num_computed);
  void fork(SeqId parent, SeqId child);
  void free(SeqId seq);
  void truncate(SeqId seq, int num_tokens);

  bool has(SeqId seq) const { return groups_[0].has(seq); }
  const std::vector<BlockId>& block_table(SeqId seq, int group = 0) const { return this->group(group).block_table(seq); }
  int num_sequences() const { return groups_[0].num_sequences(); }
  int block_size() const { return groups_[0].block_size(); }
  const KvCacheConfig& config() const { return groups_[0].config(); }
  const BlockPool& pool() const { return groups_[0].pool(); }
  // Group 0's figures; the others' through group(g).stats().
  KvStats stats() const { return groups_[0].stats(); }

 private:
  // r with group g's share of a prefix hit.
  AllocRequest for_group(const AllocRequest& r, int g, PrefixHit& scratch) const;
  std::vector<KvCacheManager> groups_;
};

}  // namespace tinfer::kv

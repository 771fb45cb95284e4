// KV cache manager: per-sequence block tables over a BlockPool, with prefix caching (chained block hashes,
// verified hits), copy-on-write for shared blocks, fork, and two layouts: paged (on demand) and reserved (each
// sequence reserves its max context up front: the naive baseline). Knows nothing of models or tensors.
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kvcache/block_hash.h"
#include "kvcache/block_pool.h"
#include "tinfer/kv_types.h"

namespace tinfer::kv {


struct KvCacheConfig {
  int num_blocks = 0;
  int block_size = 16;
  // > 0: the cache of sliding-window layers that attend to the last window_tokens positions only. As a sequence
  // advances, its blocks wholly before the window of the next position to compute go back to the pool (committed
  // ones stay findable by the prefix cache until evicted) and their table entries become kNoBlock.
  int window_tokens = 0;
  bool prefix_caching = true;
  KvLayout layout = KvLayout::kPaged;
  ReuseOrder reuse = ReuseOrder::kResidentFirst;  // which free block the pool hands out first (kv_types.h)
  BlockHashFn hash_fn = default_block_hash;  // tests inject a colliding one
};

// Leading full blocks of a token sequence already in the cache.
struct PrefixHit {
  std::vector<BlockId> blocks;
  std::vector<BlockHash> hashes;  // hashes[i] is the chained hash of blocks[i]
  int num_tokens = 0;             // blocks.size() * block_size
  // KvCacheGroups: the same leading blocks in each further group's pool ([group - 1][i]).
  std::vector<std::vector<BlockId>> group_blocks;
};

// One allocation: make the sequence hold KV slots for positions [0, num_computed + num_new).
struct AllocRequest {
  int num_computed = 0;            // positions whose KV is already there (for a new sequence: hit->num_tokens)
  int num_new = 0;                 // positions written this step: num_computed .. num_computed + num_new - 1
  const PrefixHit* hit = nullptr;  // new sequence only: cached leading blocks it shares
  int reserve_tokens = 0;          // reserved layout, new sequence only: slots reserved up front
  uint64_t extra_key = 0;          // new sequence only: salt mixed into each of its block hashes
};

struct KvStats {
  int num_blocks = 0, used = 0, free = 0, cached_free = 0, peak_used = 0;
  int touched = 0;  // blocks ever handed out (BlockPool::num_touched): the arena's part that got written
  int64_t evictions = 0;
  int64_t prefix_query_tokens = 0;  // tokens looked up (record_prefix_query)
  int64_t prefix_hit_tokens = 0;    // of which found in the cache
  int64_t waste_slots = 0;          // token slots held by live sequences but not written
};

class KvCacheManager {
 public:
  explicit KvCacheManager(KvCacheConfig config);

  // Longest run of cached full blocks that prefix tokens[0, min(size, max_tokens)). Empty with caching off. With a
  // sliding window only the blocks the next query reads must still be cached: the others are kNoBlock in the hit.
  // Counts nothing: a caller that may retry the lookup calls record_prefix_query() once per admission.
  PrefixHit match_prefix(std::span<const Token> tokens, uint64_t extra_key, int max_tokens) const;
  void record_prefix_query(int query_tokens, int hit_tokens) {
    query_tokens_ += query_tokens;
    hit_tokens_ += hit_tokens;
  }

  // Free blocks `allocate(seq, r)` would take (new blocks + revived cached blocks + copy-on-write copies).
  int blocks_needed(SeqId seq, const AllocRequest& r) const;
  bool can_allocate(SeqId seq, const AllocRequest& r) const { return blocks_needed(seq, r) <= pool_.num_free(); }
  // Grows (or, for an unknown seq, creates) the block table. A block about to be written that is shared
  // (ref > 1) or cached is replaced by a fresh one, and (src, dst) appended to *cow: the caller copies the KV
  // before writing. Returns false and changes nothing when the pool is short.
  bool allocate(SeqId seq, const AllocRequest& r, std::vector<CowCopy>* cow);
  // After the step ran: every block fully inside tokens[0, num_computed) becomes cached (prefix caching on).
  // `tokens` are all of the sequence's token ids so far (prompt then outputs).
  void commit(SeqId seq, std::span<const Token> tokens, int num_computed);
  // The child shares every block of the parent (refcount); a later write into a shared block copies it.
  void fork(SeqId parent, SeqId child);
  // Returns the sequence's blocks, tail first, so chain tails are evicted before their parents.
  void free(SeqId seq);
  // Rollback (speculative decoding's rejected draft tokens, a beam's discarded tail): the sequence keeps KV
  // slots for positions [0, num_tokens) only. Blocks wholly past them return to the pool, tail first (the
  // reserved layout keeps its reservation). A kept block stays as it is: the rejected slots in it are
  // rewritten by the next allocate(), which copies it first if it is shared or cached, so neither a sharer
  // nor the prefix cache ever sees the new writes. Hashes of blocks no longer full are dropped.
  void truncate(SeqId seq, int num_tokens);

  bool has(SeqId seq) const { return seqs_.count(seq) != 0; }
  // Position p's block is block_table(seq)[p / block_size]; kNoBlock before a sliding window's first block.
  const std::vector<BlockId>& block_table(SeqId seq) const;
  int num_sequences() const { return static_cast<int>(seqs_.size()); }
  const BlockPool& pool() const { return pool_; }
  const KvCacheConfig& config() const { return config_; }
  int block_size() const { return config_.block_size; }
  KvStats stats() const;

 private:
  struct Seq {
    std::vector<BlockId> blocks;
    std::vector<BlockHash> hashes;  // chained hashes of the leading committed full blocks
    int num_tokens = 0;             // slots handed out: highest num_computed + num_new seen
    uint64_t extra_key = 0;
    int released = 0;               // sliding window: leading table entries given back (kNoBlock)
  };
  int blocks_for(int tokens) const { return (tokens + config_.block_size - 1) / config_.block_size; }
  // Sliding window: the first block position next_pos reads (0 without a window); the blocks before it that a
  // release would free (owned by s alone); giving those back (no position from next_pos on attends to them).
  int first_needed_block(int next_pos) const;
  PrefixHit match_window_prefix(std::span<const Token> tokens, uint64_t extra_key, int limit) const;
  int releasable(const Seq& s, int next_pos) const;
  void release_outside_window(Seq& s, int next_pos);
  bool must_copy(BlockId id) const { return pool_.ref_count(id) > 1 || pool_.is_cached(id); }

  KvCacheConfig config_;
  BlockPool pool_;
  std::unordered_map<SeqId, Seq> seqs_;
  int64_t query_tokens_ = 0;
  int64_t hit_tokens_ = 0;
};

}  // namespace tinfer::kv

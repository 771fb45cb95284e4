// Block pool: fixed-size KV blocks with ref counts, an O(1) LRU list of freed blocks (intrusive doubly linked
// list), the range of blocks never handed out, and the prefix-cache index (hash -> block). Knows nothing of
// sequences, models or tensors.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "tinfer/kv_types.h"

namespace tinfer::kv {

class BlockPool {
 public:
  // All blocks start free and untouched; untouched blocks go out in id order (the first allocate() returns 0).
  BlockPool(int num_blocks, int block_size, ReuseOrder order = ReuseOrder::kResidentFirst);

  // Takes a free block in the pool's ReuseOrder: the least recently freed one (free-list head; if it was cached
  // its hash is dropped: eviction) or the lowest untouched one. Returns it with ref count 1. Throws Error when
  // no block is free.
  BlockId allocate();
  // One more owner. A free (ref 0) cached block is revived: it leaves the free list.
  void ref(BlockId id);
  // One owner fewer. At ref 0 the block goes to the free-list tail, keeping its hash (still hittable).
  void release(BlockId id);

  // Cached block whose hash, parent hash, extra key and token ids all match; a hash collision is rejected.
  std::optional<BlockId> lookup(BlockHash hash, BlockHash parent, std::span<const Token> tokens,
                                uint64_t extra_key) const;
  // Registers a full, computed block under `hash`. Returns false (block stays uncached) when the block is
  // already cached or another block already owns the hash.
  bool cache_block(BlockId id, BlockHash hash, BlockHash parent, std::span<const Token> tokens, uint64_t extra_key);

  int block_size() const { return block_size_; }
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  int num_free() const { return num_free_; }  // ref 0, including cached and untouched ones
  int num_touched() const { return untouched_; }  // blocks ever handed out: ids [0, num_touched())
  ReuseOrder reuse_order() const { return order_; }
  int num_used() const { return num_blocks() - num_free_; }
  int num_cached() const { return static_cast<int>(index_.size()); }  // blocks holding a hash (used or free)
  int num_cached_free() const;                                        // evictable cached blocks
  int peak_used() const { return peak_used_; }
  int64_t num_evictions() const { return evictions_; }

  int ref_count(BlockId id) const { return blocks_.at(id).ref; }
  bool is_cached(BlockId id) const { return blocks_.at(id).cached; }
  std::optional<BlockHash> hash_of(BlockId id) const;
  // Every free block in the order allocate() would take them (the untouched ones before or after the freed
  // ones, by ReuseOrder); O(free blocks), for tests and debugging.
  std::vector<BlockId> free_list() const;

 private:
  struct Block {
    int ref = 0;
    BlockId prev = kNoBlock;  // free-list links; kNoBlock at the ends or when not free
    BlockId next = kNoBlock;
    bool in_free_list = false;
    bool cached = false;
    BlockHash hash = 0;
    BlockHash parent = 0;
    uint64_t extra_key = 0;
    std::vector<Token> tokens;  // block_size ids when cached: the collision check
  };
  void push_tail(BlockId id);
  void unlink(BlockId id);
  void drop_hash(BlockId id);

  int block_size_;
  ReuseOrder order_;
  std::vector<Block> blocks_;
  BlockId untouched_ = 0;  // blocks [untouched_, num_blocks) were never handed out (and are not in the list)
  BlockId head_ = kNoBlock;
  BlockId tail_ = kNoBlock;
  int num_free_ = 0;
  int peak_used_ = 0;
  int num_cached_free_ = 0;
  int64_t evictions_ = 0;
  std::unordered_map<BlockHash, BlockId> index_;
};

}  // namespace tinfer::kv

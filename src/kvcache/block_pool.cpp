// Block pool implementation: intrusive LRU list over a vector of blocks, hash index for cached full blocks.
#include "kvcache/block_pool.h"

#include <algorithm>
#include <string>

#include "tinfer/error.h"

namespace tinfer::kv {

BlockPool::BlockPool(int num_blocks, int block_size, ReuseOrder order) : block_size_(block_size), order_(order) {
  check(num_blocks > 0, "block pool: num_blocks must be positive, got " + std::to_string(num_blocks));
  check(block_size > 0, "block pool: block_size must be positive, got " + std::to_string(block_size));
  blocks_.resize(num_blocks);
  num_free_ = num_blocks;  // all untouched
}

void BlockPool::push_tail(BlockId id) {
  Block& b = blocks_[id];
  b.prev = tail_;
  b.next = kNoBlock;
  if (tail_ != kNoBlock)
    blocks_[tail_].next = id;
  else
    head_ = id;
  tail_ = id;
  b.in_free_list = true;
  ++num_free_;
  if (b.cached) ++num_cached_free_;
}

void BlockPool::unlink(BlockId id) {
  Block& b = blocks_[id];
  if (b.prev != kNoBlock)
    blocks_[b.prev].next = b.next;
  else
    head_ = b.next;
  if (b.next != kNoBlock)
    blocks_[b.next].prev = b.prev;
  else
    tail_ = b.prev;
  b.prev = b.next = kNoBlock;
  b.in_free_list = false;
  --num_free_;
  if (b.cached) --num_cached_free_;
  peak_used_ = std::max(peak_used_, num_used());
}

void BlockPool::drop_hash(BlockId id) {
  Block& b = blocks_[id];
  if (!b.cached) return;
  index_.erase(b.hash);
  b.cached = false;
  b.tokens.clear();
  if (b.in_free_list) --num_cached_free_;
}

BlockId BlockPool::allocate() {
  const bool untouched_left = untouched_ < num_blocks();
  check(head_ != kNoBlock || untouched_left, "block pool: out of blocks (" + std::to_string(num_blocks()) + " in use)");
  BlockId id;
  if (untouched_left && (order_ == ReuseOrder::kFreshFirst || head_ == kNoBlock)) {
    id = untouched_++;
    --num_free_;
    peak_used_ = std::max(peak_used_, num_used());
  } else {
    id = head_;
    unlink(id);
    if (blocks_[id].cached) {
      ++evictions_;
      drop_hash(id);
    }
  }
  blocks_[id].ref = 1;
  return id;
}

void BlockPool::ref(BlockId id) {
  Block& b = blocks_.at(id);
  if (b.ref == 0) {
    check(b.in_free_list, "block pool: block " + std::to_string(id) +
                              (id >= untouched_ ? " was never allocated" : " has no owner and is not free"));
    unlink(id);
  }
  ++b.ref;
}

void BlockPool::release(BlockId id) {
  Block& b = blocks_.at(id);
  check(b.ref > 0, "block pool: release of free block " + std::to_string(id));
  if (--b.ref == 0) push_tail(id);
}

std::optional<BlockId> BlockPool::lookup(BlockHash hash, BlockHash parent, std::span<const Token> tokens,
                                         uint64_t extra_key) const {
  auto it = index_.find(hash);
  if (it == index_.end()) return std::nullopt;
  const Block& b = blocks_[it->second];
  const bool same = b.parent == parent && b.extra_key == extra_key &&
                    std::equal(b.tokens.begin(), b.tokens.end(), tokens.begin(), tokens.end());
  if (!same) return std::nullopt;  // hash collision: a different block's KV must never be reused
  return it->second;
}

bool BlockPool::cache_block(BlockId id, BlockHash hash, BlockHash parent, std::span<const Token> tokens,
                            uint64_t extra_key) {
  Block& b = blocks_.at(id);
  check(static_cast<int>(tokens.size()) == block_size_, "block pool: only full blocks can be cached");
  if (b.cached || index_.count(hash)) return false;
  b.cached = true;
  b.hash = hash;
  b.parent = parent;
  b.extra_key = extra_key;
  b.tokens.assign(tokens.begin(), tokens.end());
  index_.emplace(hash, id);
  if (b.in_free_list) ++num_cached_free_;
  return true;
}

int BlockPool::num_cached_free() const { return num_cached_free_; }

std::optional<BlockHash> BlockPool::hash_of(BlockId id) const {
  const Block& b = blocks_.at(id);
  if (!b.cached) return std::nullopt;
  return b.hash;
}

std::vector<BlockId> BlockPool::free_list() const {
  std::vector<BlockId> out;
  auto untouched = [&] {
    for (BlockId id = untouched_; id < num_blocks(); ++id) out.push_back(id);
  };
  if (order_ == ReuseOrder::kFreshFirst) untouched();
  for (BlockId id = head_; id != kNoBlock; id = blocks_[id].next) out.push_back(id);
  if (order_ == ReuseOrder::kResidentFirst) untouched();
  return out;
}

}  // namespace tinfer::kv

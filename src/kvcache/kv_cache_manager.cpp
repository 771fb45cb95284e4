// KV cache manager implementation. Invariant: every block in a live table holds one ref per table entry.
#include "kvcache/kv_cache_manager.h"

#include <algorithm>
#include <string>

#include "tinfer/error.h"

namespace tinfer::kv {

KvCacheManager::KvCacheManager(KvCacheConfig config)
    : config_(std::move(config)), pool_(config_.num_blocks, config_.block_size, config_.reuse) {
  check(static_cast<bool>(config_.hash_fn), "kv cache: hash function is empty");
  check(config_.window_tokens >= 0, "kv cache: negative sliding window");
  check(config_.window_tokens == 0 || config_.layout == KvLayout::kPaged,
        "kv cache: a sliding window needs the paged layout (the reserved one keeps every block by design)");
}

int KvCacheManager::first_needed_block(int next_pos) const {
  if (config_.window_tokens <= 0) return 0;
  // Position next_pos attends to (next_pos - window, next_pos]: blocks wholly before that are done.
  return std::max(0, next_pos - config_.window_tokens + 1) / config_.block_size;
}

int KvCacheManager::releasable(const Seq& s, int next_pos) const {
  int n = 0;
  const int first = std::min(first_needed_block(next_pos), static_cast<int>(s.blocks.size()));
  for (int i = s.released; i < first; ++i) {
    const BlockId b = s.blocks[static_cast<size_t>(i)];
    n += b != kNoBlock && pool_.ref_count(b) == 1;  // shared ones stay with their other owners
  }
  return n;
}

void KvCacheManager::release_outside_window(Seq& s, int next_pos) {
  const int first_needed = first_needed_block(next_pos);
  for (; s.released < first_needed && s.released < static_cast<int>(s.blocks.size()); ++s.released) {
    BlockId& b = s.blocks[static_cast<size_t>(s.released)];
    if (b != kNoBlock) pool_.release(b);
    b = kNoBlock;
  }
}

PrefixHit KvCacheManager::match_prefix(std::span<const Token> tokens, uint64_t extra_key, int max_tokens) const {
  PrefixHit hit;
  if (!config_.prefix_caching) return hit;
  const int bs = config_.block_size;
  const int limit = std::min(static_cast<int>(tokens.size()), std::max(max_tokens, 0));
  if (config_.window_tokens > 0) return match_window_prefix(tokens, extra_key, limit);
  BlockHash parent = 0;
  for (int i = 0; (i + 1) * bs <= limit; ++i) {
    auto span = tokens.subspan(static_cast<size_t>(i) * bs, bs);
    const BlockHash h = config_.hash_fn(parent, span, extra_key);
    auto id = pool_.lookup(h, parent, span, extra_key);
    if (!id) break;
    hit.blocks.push_back(*id);
    hit.hashes.push_back(h);
    parent = h;
  }
  hit.num_tokens = static_cast<int>(hit.blocks.size()) * bs;
  return hit;
}

// A sliding window needs only the blocks the next query reads: the longest run of n full blocks whose chain of
// hashes matches tokens and whose blocks from first_needed_block(n * bs) on are all still cached (the earlier ones,
// given back long ago and maybe evicted, come back as kNoBlock). Longest first; each try looks up a window's blocks.
PrefixHit KvCacheManager::match_window_prefix(std::span<const Token> tokens, uint64_t extra_key, int limit) const {
  const int bs = config_.block_size;
  std::vector<BlockHash> hashes;
  for (int i = 0; (i + 1) * bs <= limit; ++i)
    hashes.push_back(config_.hash_fn(i ? hashes.back() : 0, tokens.subspan(static_cast<size_t>(i) * bs, bs), extra_key));
  PrefixHit hit;
  for (int n = static_cast<int>(hashes.size()); n > 0 && hit.blocks.empty(); --n) {
    std::vector<BlockId> blocks(static_cast<size_t>(n), kNoBlock);
    bool all = true;
    for (int i = first_needed_block(n * bs); i < n && all; ++i) {
      const auto id = pool_.lookup(hashes[size_t(i)], i ? hashes[size_t(i) - 1] : 0,
                                   tokens.subspan(static_cast<size_t>(i) * bs, bs), extra_key);
      all = id.has_value();
      if (all) blocks[size_t(i)] = *id;
    }
    if (!all) continue;
    hit.blocks = std::move(blocks);
    hit.hashes.assign(hashes.begin(), hashes.begin() + n);
    hit.num_tokens = n * bs;
  }
  return hit;
}

int KvCacheManager::blocks_needed(SeqId seq, const AllocRequest& r) const {
  const int end = r.num_computed + r.num_new;
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    int shared = 0, revived = 0;
    if (r.hit) {
      shared = static_cast<int>(r.hit->blocks.size());
      // A sliding window's hit blocks before its first query's window are never taken (nor counted).
      for (size_t i = static_cast<size_t>(first_needed_block(r.num_computed)); i < r.hit->blocks.size(); ++i)
        revived += pool_.ref_count(r.hit->blocks[i]) == 0;
    }
    int target = blocks_for(end);
    if (config_.layout == KvLayout::kReserved) target = std::max(target, blocks_for(r.reserve_tokens));
    return std::max(0, target - shared) + revived;
  }
  const Seq& s = it->second;
  const int have = static_cast<int>(s.blocks.size());
  int copies = 0;
  if (r.num_new > 0) {
    const int last = std::min(have - 1, (end - 1) / config_.block_size);
    for (int i = r.num_computed / config_.block_size; i <= last; ++i) copies += must_copy(s.blocks[i]);
  }
  // allocate() first gives back the blocks that left the window (those it owns alone come free).
  return std::max(0, blocks_for(end) - have) + copies - releasable(s, r.num_computed);
}

bool KvCacheManager::allocate(SeqId seq, const AllocRequest& r, std::vector<CowCopy>* cow) {
  check(r.num_computed >= 0 && r.num_new >= 0, "kv cache: negative token count");
  if (!can_allocate(seq, r)) return false;  // (counts the blocks a window gives back below as free)
  const int bs = config_.block_size;
  const int end = r.num_computed + r.num_new;
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    const int hit_tokens = r.hit ? r.hit->num_tokens : 0;
    check(r.num_computed == hit_tokens, "kv cache: a new sequence starts at its prefix hit (" +
                                            std::to_string(hit_tokens) + " tokens), not " +
                                            std::to_string(r.num_computed));
    Seq s;
    s.extra_key = r.extra_key;
    if (r.hit) {
      s.blocks = r.hit->blocks;
      s.hashes = r.hit->hashes;
      // Blocks before the window of the first query stay where they are (kNoBlock here); the rest are revived
      // before allocating, so they cannot be evicted.
      s.released = std::min(first_needed_block(r.num_computed), static_cast<int>(s.blocks.size()));
      for (int i = 0; i < static_cast<int>(s.blocks.size()); ++i) {
        BlockId& b = s.blocks[static_cast<size_t>(i)];
        if (i < s.released) b = kNoBlock;
        else pool_.ref(b);
      }
    }
    int target = blocks_for(end);
    if (config_.layout == KvLayout::kReserved) target = std::max(target, blocks_for(r.reserve_tokens));
    while (static_cast<int>(s.blocks.size()) < target) s.blocks.push_back(pool_.allocate());
    s.num_tokens = end;
    seqs_.emplace(seq, std::move(s));
    return true;
  }
  Seq& s = it->second;
  release_outside_window(s, r.num_computed);
  // Positions from num_computed on are (re)written: their hashes no longer describe the KV.
  if (static_cast<int>(s.hashes.size()) * bs > r.num_computed) s.hashes.resize(r.num_computed / bs);
  if (r.num_new > 0) {
    const int last = std::min(static_cast<int>(s.blocks.size()) - 1, (end - 1) / bs);
    for (int i = r.num_computed / bs; i <= last; ++i) {
      if (!must_copy(s.blocks[i])) continue;
      const BlockId dst = pool_.allocate();
      if (cow) cow->push_back({s.blocks[i], dst});
      pool_.release(s.blocks[i]);
      s.blocks[i] = dst;
    }
  }
  while (static_cast<int>(s.blocks.size()) < blocks_for(end)) s.blocks.push_back(pool_.allocate());
  s.num_tokens = std::max(s.num_tokens, end);
  return true;
}

void KvCacheManager::commit(SeqId seq, std::span<const Token> tokens, int num_computed) {
  if (!config_.prefix_caching) return;
  auto it = seqs_.find(seq);
  check(it != seqs_.end(), "kv cache: commit for unknown sequence " + std::to_string(seq));
  Seq& s = it->second;
  const int bs = config_.block_size;
  const int full = std::min({num_computed, static_cast<int>(tokens.size()), s.num_tokens}) / bs;
  for (int i = static_cast<int>(s.hashes.size()); i < full && i < static_cast<int>(s.blocks.size()); ++i) {
    if (s.blocks[static_cast<size_t>(i)] == kNoBlock) break;  // given back before it was hashed: the chain ends
    const BlockHash parent = i ? s.hashes[i - 1] : 0;
    auto span = tokens.subspan(static_cast<size_t>(i) * bs, bs);
    const BlockHash h = config_.hash_fn(parent, span, s.extra_key);
    // false when an identical block computed by another sequence already owns the hash: ours stays private.
    pool_.cache_block(s.blocks[i], h, parent, span, s.extra_key);
    s.hashes.push_back(h);
  }
}

void KvCacheManager::fork(SeqId parent, SeqId child) {
  auto it = seqs_.find(parent);
  check(it != seqs_.end(), "kv cache: fork of unknown sequence " + std::to_string(parent));
  check(!seqs_.count(child), "kv cache: fork target " + std::to_string(child) + " already exists");
  Seq copy = it->second;
  for (BlockId b : copy.blocks)
    if (b != kNoBlock) pool_.ref(b);
  seqs_.emplace(child, std::move(copy));
}

void KvCacheManager::free(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  const auto& blocks = it->second.blocks;
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b)
    if (*b != kNoBlock) pool_.release(*b);
  seqs_.erase(it);
}

void KvCacheManager::truncate(SeqId seq, int num_tokens) {
  auto it = seqs_.find(seq);
  check(it != seqs_.end(), "kv cache: truncate of unknown sequence " + std::to_string(seq));
  Seq& s = it->second;
  check(num_tokens >= 0 && num_tokens <= s.num_tokens,
        "kv cache: cannot truncate sequence " + std::to_string(seq) + " to " + std::to_string(num_tokens) +
            " tokens: it holds " + std::to_string(s.num_tokens));
  // The next query (position num_tokens) reads its window: none of it may have been given back.
  check(s.released <= first_needed_block(num_tokens),
        "kv cache: cannot truncate sequence " + std::to_string(seq) + " to " + std::to_string(num_tokens) +
            " tokens: its blocks before position " + std::to_string(s.released * config_.block_size) +
            " left the sliding window, which position " + std::to_string(num_tokens) + " reads");
  const int bs = config_.block_size;
  if (static_cast<int>(s.hashes.size()) > num_tokens / bs) s.hashes.resize(static_cast<size_t>(num_tokens / bs));
  if (config_.layout == KvLayout::kPaged)
    while (static_cast<int>(s.blocks.size()) > blocks_for(num_tokens)) {
      pool_.release(s.blocks.back());
      s.blocks.pop_back();
    }
  s.num_tokens = num_tokens;
}

const std::vector<BlockId>& KvCacheManager::block_table(SeqId seq) const {
  auto it = seqs_.find(seq);
  check(it != seqs_.end(), "kv cache: no block table for sequence " + std::to_string(seq));
  return it->second.blocks;
}

KvStats KvCacheManager::stats() const {
  KvStats st;
  st.num_blocks = pool_.num_blocks();
  st.used = pool_.num_used();
  st.free = pool_.num_free();
  st.cached_free = pool_.num_cached_free();
  st.peak_used = pool_.peak_used();
  st.touched = pool_.num_touched();
  st.evictions = pool_.num_evictions();
  st.prefix_query_tokens = query_tokens_;
  st.prefix_hit_tokens = hit_tokens_;
  for (const auto& [id, s] : seqs_)
    st.waste_slots += static_cast<int64_t>(s.blocks.size() - s.released) * config_.block_size -
                      (s.num_tokens - s.released * config_.block_size);
  return st;
}

}  // namespace tinfer::kv

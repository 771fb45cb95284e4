// KV cache groups: KvCacheManager's operations over several pools, all or nothing.
#include "kvcache/kv_cache_groups.h"

#include <algorithm>
#include <limits>

#include "tinfer/error.h"

namespace tinfer::kv {

KvCacheGroups::KvCacheGroups(KvCacheConfig config) { groups_.emplace_back(std::move(config)); }

KvCacheGroups::KvCacheGroups(KvCacheConfig config, std::span<const KvGroupSpec> groups) {
  check(!groups.empty(), "kv cache: no KV groups");
  for (const KvGroupSpec& g : groups) {
    KvCacheConfig c = config;
    c.num_blocks = g.num_blocks;
    c.window_tokens = g.window_tokens;
    groups_.emplace_back(std::move(c));
  }
}

int64_t KvCacheGroups::token_capacity() const {
  int64_t cap = std::numeric_limits<int64_t>::max();
  for (const KvCacheManager& g : groups_)
    if (g.config().window_tokens == 0) cap = std::min<int64_t>(cap, int64_t(g.pool().num_blocks()) * g.block_size());
  return cap;
}

// The longest hit every group takes. A full-attention group's hit holds for any shorter length too, a windowed
// group's need not (other blocks are its window then): each group is asked again, up to the shortest answer so far,
// until they agree.
PrefixHit KvCacheGroups::match_prefix(std::span<const Token> tokens, uint64_t extra_key, int max_tokens) const {
  std::vector<PrefixHit> hits(groups_.size());
  int limit = max_tokens;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (!hits[g].blocks.empty() && hits[g].num_tokens == limit) continue;
      hits[g] = groups_[g].match_prefix(tokens, extra_key, limit);
      if (hits[g].num_tokens < limit) limit = hits[g].num_tokens, changed = true;
    }
    for (const PrefixHit& h : hits) changed = changed || h.num_tokens != limit;
    if (limit == 0) break;
  }
  PrefixHit hit = std::move(hits[0]);
  if (limit == 0) return PrefixHit{};
  for (size_t g = 1; g < hits.size(); ++g) hit.group_blocks.push_back(std::move(hits[g].blocks));
  return hit;
}

AllocRequest KvCacheGroups::for_group(const AllocRequest& r, int g, PrefixHit& scratch) const {
  if (g == 0 || r.hit == nullptr) return r;
  AllocRequest out = r;
  scratch.hashes = r.hit->hashes;
  scratch.num_tokens = r.hit->num_tokens;
  scratch.blocks = r.hit->num_tokens > 0 ? r.hit->group_blocks.at(static_cast<size_t>(g - 1)) : std::vector<BlockId>{};
  out.hit = &scratch;
  return out;
}

bool KvCacheGroups::can_allocate(SeqId seq, const AllocRequest& r) const {
  PrefixHit scratch;
  for (int g = 0; g < num_groups(); ++g)
    if (!groups_[size_t(g)].can_allocate(seq, for_group(r, g, scratch))) return false;
  return true;
}

bool KvCacheGroups::allocate(SeqId seq, const AllocRequest& r, std::vector<CowCopy>* cow) {
  if (!can_allocate(seq, r)) return false;
  PrefixHit scratch;
  for (int g = 0; g < num_groups(); ++g) {
    const size_t first = cow ? cow->size() : 0;
    check(groups_[size_t(g)].allocate(seq, for_group(r, g, scratch), cow), "kv cache: group allocation failed after its check");
    if (cow)
      for (size_t i = first; i < cow->size(); ++i) (*cow)[i].group = g;
  }
  return true;
}

void KvCacheGroups::commit(SeqId seq, std::span<const Token> tokens, int num_computed) {
  for (KvCacheManager& g : groups_) g.commit(seq, tokens, num_computed);
}
void KvCacheGroups::fork(SeqId parent, SeqId child) {
  for (KvCacheManager& g : groups_) g.fork(parent, child);
}
void KvCacheGroups::free(SeqId seq) {
  for (KvCacheManager& g : groups_) g.free(seq);
}
void KvCacheGroups::truncate(SeqId seq, int num_tokens) {
  for (KvCacheManager& g : groups_) g.truncate(seq, num_tokens);
}

}  // namespace tinfer::kv

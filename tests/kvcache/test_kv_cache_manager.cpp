// KvCacheManager: on-demand tables with exact block ids, reverse freeing, prefix hits on full blocks only,
// injected hash collisions rejected, copy-on-write, fork, and the reserved layout's waste.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "tinfer/error.h"
#include "kvcache/kv_cache_manager.h"

namespace tinfer::kv {
namespace {

using Ids = std::vector<BlockId>;

std::vector<Token> iota_tokens(int n, Token start = 100) {
  std::vector<Token> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

KvCacheConfig cfg(int blocks, bool caching = true, KvLayout layout = KvLayout::kPaged) {
  KvCacheConfig c;
  c.num_blocks = blocks;
  c.block_size = 4;
  c.prefix_caching = caching;
  c.layout = layout;
  c.reuse = ReuseOrder::kFreshFirst;  // the exact ids below follow vLLM's order (ResidentFirst* tests: the default's)
  return c;
}

TEST(KvCacheManager, AllocatesOnDemandAndFreesInReverse) {
  KvCacheManager kv(cfg(8, false));
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 5}, nullptr));
  EXPECT_EQ(kv.block_table(1), (Ids{0, 1}));
  ASSERT_TRUE(kv.allocate(2, {.num_computed = 0, .num_new = 3}, nullptr));
  EXPECT_EQ(kv.block_table(2), (Ids{2}));
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 5, .num_new = 1}, nullptr));  // 6 tokens: still two blocks
  EXPECT_EQ(kv.block_table(1), (Ids{0, 1}));
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 6, .num_new = 3}, nullptr));  // 9 tokens: a third block
  EXPECT_EQ(kv.block_table(1), (Ids{0, 1, 3}));
  EXPECT_EQ(kv.stats().used, 4);
  kv.free(1);
  EXPECT_EQ(kv.pool().free_list(), (Ids{4, 5, 6, 7, 3, 1, 0}));  // tail of the chain first
  EXPECT_EQ(kv.stats().peak_used, 4);
  kv.free(2);
  EXPECT_EQ(kv.stats().free, 8);
}

// The default order over a sequence's life: the next sequence takes the blocks the last one freed (its chain's
// tail first), evicting their cached prefix, and the arena's touched part stays at the peak in use.
TEST(KvCacheManager, ResidentFirstReusesTheFreedChainBeforeUntouchedBlocks) {
  KvCacheConfig c = cfg(8);
  c.reuse = ReuseOrder::kResidentFirst;
  KvCacheManager kv(c);
  const auto toks = iota_tokens(10);
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 10}, nullptr));
  EXPECT_EQ(kv.block_table(1), (Ids{0, 1, 2}));
  kv.commit(1, toks, 10);
  kv.free(1);
  EXPECT_EQ(kv.pool().free_list(), (Ids{2, 1, 0, 3, 4, 5, 6, 7}));
  EXPECT_EQ(kv.stats().cached_free, 2);
  const auto other = iota_tokens(10, 50);
  ASSERT_TRUE(kv.allocate(2, {.num_computed = 0, .num_new = 10}, nullptr));
  EXPECT_EQ(kv.block_table(2), (Ids{2, 1, 0}));  // block 2 was uncached; 1 and 0 evicted
  EXPECT_EQ(kv.stats().evictions, 2);
  EXPECT_EQ(kv.match_prefix(toks, 0, 9).num_tokens, 0);
  kv.commit(2, other, 10);
  EXPECT_EQ(kv.match_prefix(other, 0, 9).blocks, (Ids{2, 1}));
  ASSERT_TRUE(kv.allocate(3, {.num_computed = 0, .num_new = 4}, nullptr));  // nothing freed: the arena grows
  EXPECT_EQ(kv.block_table(3), (Ids{3}));
  EXPECT_EQ(kv.pool().num_touched(), 4);
  EXPECT_EQ(kv.stats().peak_used, 4);
}

TEST(KvCacheManager, RefusesWithoutChangingAnything) {
  KvCacheManager kv(cfg(2, false));
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 4}, nullptr));
  EXPECT_EQ(kv.blocks_needed(2, {.num_computed = 0, .num_new = 8}), 2);
  EXPECT_FALSE(kv.can_allocate(2, {.num_computed = 0, .num_new = 8}));
  EXPECT_FALSE(kv.allocate(2, {.num_computed = 0, .num_new = 8}, nullptr));
  EXPECT_FALSE(kv.has(2));
  EXPECT_EQ(kv.pool().free_list(), (Ids{1}));
}

TEST(KvCacheManager, PrefixHitsFullBlocksOnly) {
  KvCacheManager kv(cfg(8));
  const auto toks = iota_tokens(10);
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 10}, nullptr));
  EXPECT_EQ(kv.match_prefix(toks, 0, 9).num_tokens, 0);  // nothing committed yet
  kv.commit(1, toks, 10);
  EXPECT_EQ(kv.pool().num_cached(), 2);  // blocks 0 and 1 are full; block 2 holds 2 tokens

  PrefixHit hit = kv.match_prefix(toks, 0, 9);
  EXPECT_EQ(hit.blocks, (Ids{0, 1}));
  EXPECT_EQ(hit.num_tokens, 8);
  EXPECT_EQ(kv.match_prefix(toks, 0, 7).blocks, (Ids{0}));  // the limit cuts the second block
  auto other = toks;
  other[5] = 1;
  EXPECT_EQ(kv.match_prefix(other, 0, 9).blocks, (Ids{0}));  // diverges inside block 1
  EXPECT_EQ(kv.match_prefix(toks, 99, 9).num_tokens, 0);     // another cache salt never shares

  ASSERT_TRUE(kv.allocate(2, {.num_computed = 8, .num_new = 2, .hit = &hit}, nullptr));
  EXPECT_EQ(kv.block_table(2), (Ids{0, 1, 3}));
  EXPECT_EQ(kv.pool().ref_count(0), 2);
  EXPECT_EQ(kv.pool().ref_count(1), 2);
}

TEST(KvCacheManager, CachedFreeBlocksReviveAndTailsAreEvictedFirst) {
  KvCacheManager kv(cfg(8));
  const auto toks = iota_tokens(10);
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 10}, nullptr));
  kv.commit(1, toks, 10);
  kv.free(1);
  EXPECT_EQ(kv.pool().free_list(), (Ids{3, 4, 5, 6, 7, 2, 1, 0}));
  EXPECT_EQ(kv.stats().cached_free, 2);

  ASSERT_TRUE(kv.allocate(9, {.num_computed = 0, .num_new = 24}, nullptr));  // 6 blocks: 3..7 then 2
  EXPECT_EQ(kv.block_table(9), (Ids{3, 4, 5, 6, 7, 2}));
  EXPECT_EQ(kv.match_prefix(toks, 0, 9).num_tokens, 8);                      // both cached blocks survived
  ASSERT_TRUE(kv.allocate(9, {.num_computed = 24, .num_new = 1}, nullptr));  // evicts block 1: the chain tail
  EXPECT_EQ(kv.block_table(9).back(), 1);
  EXPECT_EQ(kv.match_prefix(toks, 0, 9).blocks, (Ids{0}));
  EXPECT_EQ(kv.stats().evictions, 1);

  PrefixHit hit = kv.match_prefix(toks, 0, 9);
  // Reviving cached block 0 takes it from the free list, so it counts: 1 revived + 1 new > 1 free.
  EXPECT_EQ(kv.blocks_needed(2, {.num_computed = 4, .num_new = 1, .hit = &hit}), 2);
  EXPECT_FALSE(kv.allocate(2, {.num_computed = 4, .num_new = 1, .hit = &hit}, nullptr));
  EXPECT_EQ(kv.blocks_needed(2, {.num_computed = 4, .num_new = 0, .hit = &hit}), 1);
  ASSERT_TRUE(kv.allocate(2, {.num_computed = 4, .num_new = 0, .hit = &hit}, nullptr));
  EXPECT_EQ(kv.block_table(2), (Ids{0}));
  EXPECT_EQ(kv.stats().free, 0);
}

TEST(KvCacheManager, ForcedHashCollisionIsRejectedByTheTokenCheck) {
  KvCacheConfig c = cfg(8);
  c.hash_fn = [](BlockHash, std::span<const Token>, uint64_t) -> BlockHash { return 42; };
  KvCacheManager kv(c);
  const auto a = iota_tokens(5, 1);
  const auto b = iota_tokens(5, 50);
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 5}, nullptr));
  kv.commit(1, a, 5);
  EXPECT_EQ(kv.match_prefix(b, 0, 4).num_tokens, 0);  // same hash 42, other tokens: no hit
  EXPECT_EQ(kv.match_prefix(a, 0, 4).num_tokens, 4);  // the real owner still hits
  ASSERT_TRUE(kv.allocate(2, {.num_computed = 0, .num_new = 5}, nullptr));
  kv.commit(2, b, 5);  // hash taken: b's block stays private
  EXPECT_FALSE(kv.pool().is_cached(kv.block_table(2)[0]));
  EXPECT_EQ(kv.match_prefix(b, 0, 4).num_tokens, 0);
}

TEST(KvCacheManager, ForkSharesAndCopyOnWriteSplits) {
  KvCacheManager kv(cfg(8));
  const auto toks = iota_tokens(6);
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 6}, nullptr));
  kv.commit(1, toks, 6);
  kv.fork(1, 2);
  EXPECT_EQ(kv.block_table(2), (Ids{0, 1}));
  EXPECT_EQ(kv.pool().ref_count(0), 2);
  EXPECT_EQ(kv.pool().ref_count(1), 2);
  EXPECT_THROW(kv.fork(1, 2), Error);

  std::vector<CowCopy> cow;
  EXPECT_EQ(kv.blocks_needed(2, {.num_computed = 6, .num_new = 1}), 1);
  ASSERT_TRUE(kv.allocate(2, {.num_computed = 6, .num_new = 1}, &cow));  // writes slot 6 of shared block 1
  EXPECT_EQ(cow, (std::vector<CowCopy>{{1, 2}}));
  EXPECT_EQ(kv.block_table(2), (Ids{0, 2}));
  EXPECT_EQ(kv.pool().ref_count(1), 1);
  cow.clear();
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 6, .num_new = 1}, &cow));  // block 1 is now 1's alone
  EXPECT_TRUE(cow.empty());
  EXPECT_EQ(kv.block_table(1), (Ids{0, 1}));

  // Rewriting inside a cached (read-only) block copies it too.
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 2, .num_new = 1}, &cow));
  EXPECT_EQ(cow, (std::vector<CowCopy>{{0, 3}}));
  EXPECT_EQ(kv.block_table(1), (Ids{3, 1}));
  kv.free(1);
  kv.free(2);
  EXPECT_EQ(kv.stats().free, 8);
}

TEST(KvCacheManager, ReservedLayoutHoldsMaxContextAndReportsWaste) {
  KvCacheManager reserved(cfg(10, false, KvLayout::kReserved));
  KvCacheManager paged(cfg(10, false, KvLayout::kPaged));
  for (KvCacheManager* kv : {&reserved, &paged})
    ASSERT_TRUE(kv->allocate(1, {.num_computed = 0, .num_new = 3, .reserve_tokens = 16}, nullptr));
  EXPECT_EQ(reserved.block_table(1).size(), 4u);
  EXPECT_EQ(reserved.stats().waste_slots, 13);  // 16 reserved, 3 written
  EXPECT_EQ(paged.block_table(1).size(), 1u);
  EXPECT_EQ(paged.stats().waste_slots, 1);  // only the partial block's tail

  ASSERT_TRUE(reserved.allocate(1, {.num_computed = 3, .num_new = 10}, nullptr));  // grows inside its reservation
  EXPECT_EQ(reserved.block_table(1).size(), 4u);
  ASSERT_TRUE(reserved.allocate(2, {.num_computed = 0, .num_new = 1, .reserve_tokens = 16}, nullptr));
  EXPECT_FALSE(reserved.allocate(3, {.num_computed = 0, .num_new = 1, .reserve_tokens = 16}, nullptr));
  EXPECT_TRUE(paged.allocate(3, {.num_computed = 0, .num_new = 1, .reserve_tokens = 16}, nullptr));
}

// Speculative decoding's rollback: 5 committed + 6 drafted tokens (3 blocks), 2 drafts accepted -> 7 kept.
TEST(KvCacheManager, TruncateReturnsTailBlocksAndNeverLeaksDraftsIntoTheCache) {
  KvCacheManager kv(cfg(8));
  auto toks = iota_tokens(11);
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 5}, nullptr));
  kv.commit(1, toks, 5);  // block 0 cached (tokens 0-3)
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 5, .num_new = 6}, nullptr));  // drafts at 5..10
  EXPECT_EQ(kv.block_table(1), (Ids{0, 1, 2}));
  kv.truncate(1, 7);  // positions 0..6 stay; block 2 (8..10) goes back
  EXPECT_EQ(kv.block_table(1), (Ids{0, 1}));
  EXPECT_EQ(kv.pool().free_list().front(), 3);
  EXPECT_EQ(kv.pool().free_list().back(), 2);  // returned to the back of the free list
  EXPECT_FALSE(kv.pool().is_cached(1));        // never committed: nobody can hit it
  toks[7] = 999;                               // the real token at 7 differs from the rejected draft
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 7, .num_new = 2}, nullptr));  // 8 needs block 2 again
  EXPECT_EQ(kv.block_table(1), (Ids{0, 1, 3}));
  kv.commit(1, toks, 9);
  EXPECT_EQ(kv.match_prefix(toks, 0, 100).num_tokens, 8);  // hashes of the tokens actually kept
  // Rolling back into a cached block drops its hash from the sequence; the next write copies it, so the
  // cache keeps the old KV under the old hash.
  kv.truncate(1, 6);
  EXPECT_EQ(kv.block_table(1), (Ids{0, 1}));
  std::vector<CowCopy> cow;
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 6, .num_new = 1}, &cow));
  EXPECT_EQ(cow, (std::vector<CowCopy>{{1, 4}}));  // (3 went to the back of the free list)
  EXPECT_EQ(kv.block_table(1), (Ids{0, 4}));
  EXPECT_EQ(kv.match_prefix(toks, 0, 100).num_tokens, 8);
  EXPECT_THROW(kv.truncate(1, 8), Error);  // holds 7
  EXPECT_THROW(kv.truncate(1, -1), Error);
  EXPECT_THROW(kv.truncate(5, 0), Error);
  kv.truncate(1, 0);
  EXPECT_TRUE(kv.block_table(1).empty());
  kv.free(1);
  EXPECT_EQ(kv.stats().used, 0);
  EXPECT_EQ(kv.stats().free, 8);

  KvCacheManager reserved(cfg(8, false, KvLayout::kReserved));
  ASSERT_TRUE(reserved.allocate(1, {.num_computed = 0, .num_new = 9, .reserve_tokens = 16}, nullptr));
  reserved.truncate(1, 2);
  EXPECT_EQ(reserved.block_table(1).size(), 4u);  // the reservation stays
  EXPECT_EQ(reserved.stats().waste_slots, 14);
}

TEST(KvCacheManager, NewSequenceMustStartAtItsHit) {
  KvCacheManager kv(cfg(4));
  EXPECT_THROW(kv.allocate(1, {.num_computed = 4, .num_new = 1}, nullptr), Error);
  EXPECT_THROW(kv.block_table(7), Error);
}

}  // namespace
}  // namespace tinfer::kv

// Sliding-window KV (KvCacheConfig::window_tokens, KvCacheGroups): exact block ids as a sequence's early blocks
// leave its window and go back to the pool, rollback refused into given-back blocks, fork/free skipping them,
// committed blocks that left the window still found by the prefix cache, and groups allocating all or nothing
// with copy-on-write copies naming their group.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "tinfer/error.h"
#include "kvcache/kv_cache_groups.h"
#include "kvcache/kv_cache_manager.h"

namespace tinfer::kv {
namespace {

using Ids = std::vector<BlockId>;
constexpr BlockId X = kNoBlock;

KvCacheConfig cfg(int blocks, int window, bool caching = false) {
  KvCacheConfig c;
  c.num_blocks = blocks;
  c.block_size = 4;
  c.window_tokens = window;
  c.prefix_caching = caching;
  c.reuse = ReuseOrder::kFreshFirst;  // the exact ids below follow vLLM's order (test_kv_cache_manager: the default's)
  return c;
}

std::vector<Token> iota_tokens(int n) {
  std::vector<Token> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), 100);
  return t;
}

TEST(KvWindow, BlocksLeavingTheWindowReturnToThePool) {
  KvCacheManager kv(cfg(8, 6));  // position p attends to p-5..p
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 10}, nullptr));
  EXPECT_EQ(kv.block_table(1), (Ids{0, 1, 2}));  // a prefill chunk keeps every block its queries read
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 10, .num_new = 1}, nullptr));  // position 10 reads 5..10
  EXPECT_EQ(kv.block_table(1), (Ids{X, 1, 2}));
  EXPECT_EQ(kv.pool().free_list(), (Ids{3, 4, 5, 6, 7, 0}));
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 11, .num_new = 2}, nullptr));  // 11 reads 6..11: block 1 still
  EXPECT_EQ(kv.block_table(1), (Ids{X, 1, 2, 3}));
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 13, .num_new = 1}, nullptr));  // 13 reads 8..13
  EXPECT_EQ(kv.block_table(1), (Ids{X, X, 2, 3}));
  EXPECT_EQ(kv.pool().free_list(), (Ids{4, 5, 6, 7, 0, 1}));
  EXPECT_EQ(kv.stats().used, 2);
  EXPECT_EQ(kv.stats().waste_slots, 2);  // 8 slots held for positions 8..13
  // Rollback may not bring back a query whose window was given back (12 reads 7..12: block 1); 13 reads 8..13.
  EXPECT_THROW(kv.truncate(1, 7), Error);
  EXPECT_THROW(kv.truncate(1, 12), Error);
  kv.truncate(1, 13);
  EXPECT_EQ(kv.block_table(1), (Ids{X, X, 2, 3}));
  kv.fork(1, 2);
  EXPECT_EQ(kv.block_table(2), (Ids{X, X, 2, 3}));
  EXPECT_EQ(kv.pool().ref_count(2), 2);
  kv.free(1);
  kv.free(2);
  EXPECT_EQ(kv.stats().free, 8);
}

// A sequence of any length holds about its window: 100 decode steps through a 3-block pool with window 6.
TEST(KvWindow, LongSequenceRunsInAPoolTheSizeOfItsWindow) {
  KvCacheManager kv(cfg(3, 6));
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 4}, nullptr));
  for (int p = 4; p < 104; ++p) ASSERT_TRUE(kv.allocate(1, {.num_computed = p, .num_new = 1}, nullptr)) << p;
  EXPECT_LE(kv.stats().peak_used, 3);
  EXPECT_EQ(kv.block_table(1).size(), 26u);
  EXPECT_EQ(kv.block_table(1)[23], X);  // positions 92..95 are before 103's window (98..103)
  EXPECT_NE(kv.block_table(1)[24], X);
}

TEST(KvWindow, CommittedBlocksThatLeftTheWindowStayInThePrefixCache) {
  KvCacheManager kv(cfg(8, 6, true));
  const std::vector<Token> t = iota_tokens(13);
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 12}, nullptr));
  kv.commit(1, t, 12);
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 12, .num_new = 1}, nullptr));  // 12 reads 7..12: block 0 leaves
  EXPECT_EQ(kv.block_table(1), (Ids{X, 1, 2, 3}));
  EXPECT_EQ(kv.stats().cached_free, 1);
  const PrefixHit hit = kv.match_prefix(t, 0, 12);
  EXPECT_EQ(hit.blocks, (Ids{X, 1, 2}));  // position 12 reads 7..12: block 0 is not needed
  ASSERT_TRUE(kv.allocate(2, {.num_computed = 12, .num_new = 1, .hit = &hit}, nullptr));
  EXPECT_EQ(kv.block_table(2), (Ids{X, 1, 2, 4}));  // block 0, before position 12's window, is not taken
  EXPECT_EQ(kv.stats().cached_free, 1);
}

// allocate() gives back the blocks that left the window before it takes new ones, and can_allocate() counts them:
// a chunk fits a pool the planner sized for one window and one step (found by review: it was refused, and a lone
// sequence preempted itself forever).
TEST(KvWindow, BlocksGivenBackCountAsFreeForTheSameAllocation) {
  KvCacheManager kv(cfg(8, 8));  // window 8 = 2 blocks, one sequence, 16-token steps: 1 x (2 + 2) + 4
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 16}, nullptr));
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 16, .num_new = 16}, nullptr));  // reads 9..31: blocks 2..7
  EXPECT_EQ(kv.block_table(1), (Ids{X, X, 2, 3, 4, 5, 6, 7}));
  // 32..47 reads 25..47: blocks 6..11; 2..5 go back in the same call, 4 new ones come from them.
  EXPECT_EQ(kv.blocks_needed(1, {.num_computed = 32, .num_new = 16}), 0);
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 32, .num_new = 16}, nullptr));
  EXPECT_EQ(kv.block_table(1), (Ids{X, X, X, X, X, X, 6, 7, 0, 1, 2, 3}));
  // A block shared with a fork is not freed by giving it back: it does not count.
  kv.fork(1, 2);
  EXPECT_EQ(kv.blocks_needed(1, {.num_computed = 48, .num_new = 4}), 1);
}

// A prefix hit in a windowed pool takes only the blocks its first query's window reads (found by review: every
// hit block was revived and counted, so a next chat turn longer than the pool was never admitted).
TEST(KvWindow, PrefixHitTakesOnlyTheWindowsBlocks) {
  KvCacheManager kv(cfg(6, 4, true));
  const std::vector<Token> t = iota_tokens(25);
  for (int p = 0; p < 24; p += 4) {
    ASSERT_TRUE(kv.allocate(1, {.num_computed = p, .num_new = 4}, nullptr));
    kv.commit(1, t, p + 4);
  }
  kv.free(1);
  const PrefixHit hit = kv.match_prefix(t, 0, 24);
  ASSERT_EQ(hit.num_tokens, 24);
  // Position 24 reads 21..24: hit block 5 and a new block 6.
  EXPECT_EQ(kv.blocks_needed(2, {.num_computed = 24, .num_new = 1, .hit = &hit}), 2);
  ASSERT_TRUE(kv.allocate(2, {.num_computed = 24, .num_new = 1, .hit = &hit}, nullptr));
  const Ids& table = kv.block_table(2);
  EXPECT_EQ(std::count(table.begin(), table.end(), X), 5);
  EXPECT_EQ(table[5], hit.blocks[5]);
  EXPECT_EQ(kv.stats().used, 2);
}

// A windowed prefix hit needs only its window's blocks: after the chain's first blocks were evicted, a long prompt
// still hits in full (found by review: the chain from block 0 was required, so early evictions lost every hit).
TEST(KvWindow, PrefixHitSurvivesTheEvictionOfBlocksBeforeTheWindow) {
  KvCacheManager kv(cfg(8, 6, true));
  const std::vector<Token> t = iota_tokens(25);
  for (int p = 0; p < 24; p += 4) {  // 24 tokens in 4-token steps: blocks 0..5, the early ones given back on the way
    ASSERT_TRUE(kv.allocate(1, {.num_computed = p, .num_new = 4}, nullptr));
    kv.commit(1, t, p + 4);
  }
  kv.free(1);
  ASSERT_TRUE(kv.allocate(2, {.num_computed = 0, .num_new = 8}, nullptr));   // the never-used blocks 6, 7
  ASSERT_TRUE(kv.allocate(3, {.num_computed = 0, .num_new = 8}, nullptr));   // evicts 0 and 1, the chain's start
  EXPECT_EQ(kv.block_table(3), (Ids{0, 1}));
  const PrefixHit hit = kv.match_prefix(t, 0, 24);
  EXPECT_EQ(hit.num_tokens, 24);
  EXPECT_EQ(hit.blocks, (Ids{X, X, X, X, 4, 5}));  // position 24 reads 19..24: blocks 4 and 5
  ASSERT_TRUE(kv.allocate(4, {.num_computed = 24, .num_new = 1, .hit = &hit}, nullptr));
  EXPECT_EQ(kv.block_table(4), (Ids{X, X, X, X, 4, 5, 2}));
  // The chain is still verified: other tokens hit nothing.
  std::vector<Token> other = t;
  other[1] = 7;
  EXPECT_EQ(kv.match_prefix(other, 0, 24).num_tokens, 0);
}

TEST(KvWindow, ReservedLayoutRefusesAWindow) {
  KvCacheConfig c = cfg(8, 6);
  c.layout = KvLayout::kReserved;
  EXPECT_THROW(KvCacheManager{c}, Error);
}

TEST(KvGroups, AllocateInEveryGroupOrNone) {
  const KvGroupSpec specs[] = {{8, 0}, {6, 6}};
  KvCacheGroups kv(cfg(0, 0), specs);
  EXPECT_EQ(kv.token_capacity(), 32);
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 10}, nullptr));
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 10, .num_new = 1}, nullptr));
  EXPECT_EQ(kv.block_table(1, 0), (Ids{0, 1, 2}));
  EXPECT_EQ(kv.block_table(1, 1), (Ids{X, 1, 2}));
  // 20 tokens: group 0 has the 5 blocks, group 1 (4 free) does not: nothing changes anywhere.
  EXPECT_FALSE(kv.can_allocate(2, {.num_computed = 0, .num_new = 20}));
  EXPECT_FALSE(kv.allocate(2, {.num_computed = 0, .num_new = 20}, nullptr));
  EXPECT_FALSE(kv.has(2));
  EXPECT_EQ(kv.group(0).stats().free, 5);
  EXPECT_EQ(kv.group(1).stats().free, 4);
  // A fork writing into the shared last block copies it in both groups, each copy naming its group.
  kv.fork(1, 2);
  std::vector<CowCopy> cow;
  ASSERT_TRUE(kv.allocate(2, {.num_computed = 11, .num_new = 1}, &cow));
  EXPECT_EQ(cow, (std::vector<CowCopy>{{2, 3, 0}, {2, 3, 1}}));
  kv.free(1);
  kv.free(2);
  EXPECT_EQ(kv.group(0).stats().free, 8);
  EXPECT_EQ(kv.group(1).stats().free, 6);
}

TEST(KvGroups, PrefixHitIsWhatEveryGroupStillHas) {
  const KvGroupSpec specs[] = {{8, 0}, {6, 6}};
  KvCacheGroups kv(cfg(0, 0, true), specs);
  const std::vector<Token> t = iota_tokens(17);
  ASSERT_TRUE(kv.allocate(1, {.num_computed = 0, .num_new = 16}, nullptr));
  kv.commit(1, t, 16);
  PrefixHit hit = kv.match_prefix(t, 0, 16);
  EXPECT_EQ(hit.num_tokens, 16);
  ASSERT_EQ(hit.group_blocks.size(), 1u);
  EXPECT_EQ(hit.group_blocks[0], (Ids{X, X, 2, 3}));  // the window group needs what position 16 reads: 11..16
  kv.free(1);  // every block cached and free, the chain's tail first in line for eviction
  // Three blocks for another sequence: group 0 has 4 never-used ones, group 1 only 2, so it evicts block 3, the
  // chain's last: 16 tokens no longer hit in group 1, 12 do (position 12 reads 7..12: blocks 1, 2), and group 0
  // agrees on 12.
  ASSERT_TRUE(kv.allocate(2, {.num_computed = 0, .num_new = 12}, nullptr));
  EXPECT_EQ(kv.block_table(2, 0), (Ids{4, 5, 6}));
  EXPECT_EQ(kv.block_table(2, 1), (Ids{4, 5, 3}));
  hit = kv.match_prefix(t, 0, 16);
  EXPECT_EQ(hit.num_tokens, 12);
  EXPECT_EQ(hit.blocks, (Ids{0, 1, 2}));
  EXPECT_EQ(hit.group_blocks, (std::vector<Ids>{{X, 1, 2}}));
}

TEST(KvGroups, CapacityIsUnboundedWhenEveryGroupIsWindowed) {
  const KvGroupSpec specs[] = {{4, 6}};
  EXPECT_EQ(KvCacheGroups(cfg(0, 0), specs).token_capacity(), std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace tinfer::kv

// BlockPool: exact block ids, ref counts and LRU free-list order; cached blocks revive or get evicted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tinfer/error.h"
#include "kvcache/block_pool.h"

namespace tinfer::kv {
namespace {

std::vector<Token> fill(int n, Token v) { return std::vector<Token>(n, v); }

TEST(BlockPool, AllocatesInIdOrderAndFreesToTail) {
  BlockPool pool(4, 2, ReuseOrder::kFreshFirst);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{0, 1, 2, 3}));
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_EQ(pool.num_used(), 3);
  EXPECT_EQ(pool.num_free(), 1);
  pool.release(1);
  pool.release(0);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{3, 1, 0}));  // LRU: the oldest free block first
  EXPECT_EQ(pool.allocate(), 3);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.peak_used(), 3);
}

// The default order: what was freed goes out again before any untouched block, so the touched ids stay 0..2.
TEST(BlockPool, ResidentFirstReusesFreedBlocksBeforeUntouchedOnes) {
  BlockPool pool(4, 2);
  EXPECT_EQ(pool.reuse_order(), ReuseOrder::kResidentFirst);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{0, 1, 2, 3}));
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_EQ(pool.num_touched(), 3);
  pool.release(1);
  pool.release(0);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{1, 0, 3}));  // freed (LRU), then untouched
  EXPECT_EQ(pool.num_free(), 3);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.num_touched(), 3);
  EXPECT_EQ(pool.allocate(), 3);  // nothing freed left: the arena grows
  EXPECT_EQ(pool.num_touched(), 4);
  EXPECT_EQ(pool.peak_used(), 4);
  EXPECT_THROW(pool.allocate(), Error);
}

// A cached free block is evicted before untouched memory is used; vLLM's order keeps it while any is left.
TEST(BlockPool, ResidentFirstEvictsBeforeTouchingFreshFirstKeepsTheCache) {
  for (ReuseOrder order : {ReuseOrder::kResidentFirst, ReuseOrder::kFreshFirst}) {
    SCOPED_TRACE(reuse_order_name(order));
    BlockPool pool(3, 2, order);
    const BlockId a = pool.allocate();
    ASSERT_TRUE(pool.cache_block(a, 5, 0, fill(2, 3), 0));
    pool.release(a);
    const bool resident = order == ReuseOrder::kResidentFirst;
    EXPECT_EQ(pool.allocate(), resident ? a : 1);
    EXPECT_EQ(pool.lookup(5, 0, fill(2, 3), 0).has_value(), !resident);
    EXPECT_EQ(pool.num_evictions(), resident ? 1 : 0);
    EXPECT_EQ(pool.num_touched(), resident ? 1 : 2);
  }
}

TEST(BlockPool, RefOfABlockNeverAllocatedIsAnError) {
  BlockPool pool(3, 2);
  pool.allocate();
  try {
    pool.ref(2);
    FAIL() << "ref of an untouched block";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block 2 was never allocated"), std::string::npos) << e.what();
  }
}

TEST(BlockPool, RefCountsKeepBlocksOutOfTheFreeList) {
  BlockPool pool(3, 2, ReuseOrder::kFreshFirst);
  const BlockId b = pool.allocate();
  pool.ref(b);
  EXPECT_EQ(pool.ref_count(b), 2);
  pool.release(b);
  EXPECT_EQ(pool.ref_count(b), 1);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{1, 2}));
  pool.release(b);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{1, 2, 0}));
  EXPECT_THROW(pool.release(b), Error);
}

TEST(BlockPool, OutOfBlocksThrows) {
  BlockPool pool(1, 4);
  pool.allocate();
  EXPECT_THROW(pool.allocate(), Error);
}

TEST(BlockPool, CachedFreeBlockRevivesFromTheMiddleOfTheList) {
  BlockPool pool(3, 2);
  const BlockId a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  ASSERT_TRUE(pool.cache_block(b, 77, 0, fill(2, 5), 0));
  pool.release(a);
  pool.release(b);
  pool.release(c);
  EXPECT_EQ(pool.num_cached_free(), 1);
  auto hit = pool.lookup(77, 0, fill(2, 5), 0);
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, b);
  pool.ref(b);  // revive: leaves the free list, keeps its hash
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{a, c}));
  EXPECT_EQ(pool.num_cached_free(), 0);
  EXPECT_TRUE(pool.is_cached(b));
}

TEST(BlockPool, EvictionDropsTheHash) {
  BlockPool pool(2, 2);
  const BlockId a = pool.allocate();
  pool.allocate();
  ASSERT_TRUE(pool.cache_block(a, 9, 0, fill(2, 1), 0));
  pool.release(a);
  EXPECT_EQ(pool.allocate(), a);  // the only free block: evicted and reused
  EXPECT_FALSE(pool.is_cached(a));
  EXPECT_FALSE(pool.lookup(9, 0, fill(2, 1), 0));
  EXPECT_EQ(pool.num_evictions(), 1);
  EXPECT_EQ(pool.num_cached(), 0);
}

TEST(BlockPool, LookupRejectsCollisions) {
  BlockPool pool(2, 2);
  const BlockId a = pool.allocate();
  ASSERT_TRUE(pool.cache_block(a, 42, 0, {{1, 2}}, 7));
  EXPECT_TRUE(pool.lookup(42, 0, {{1, 2}}, 7));
  EXPECT_FALSE(pool.lookup(42, 0, {{1, 3}}, 7));  // same hash, other tokens
  EXPECT_FALSE(pool.lookup(42, 5, {{1, 2}}, 7));  // same hash, other parent
  EXPECT_FALSE(pool.lookup(42, 0, {{1, 2}}, 8));  // same hash, other salt
  const BlockId b = pool.allocate();
  EXPECT_FALSE(pool.cache_block(b, 42, 0, {{9, 9}}, 7));  // the hash is taken: b stays private
  EXPECT_FALSE(pool.is_cached(b));
  EXPECT_THROW(pool.cache_block(b, 43, 0, {{9}}, 7), Error);  // partial blocks are never cached
}

}  // namespace
}  // namespace tinfer::kv

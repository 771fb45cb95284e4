// Randomised stress of KvCacheManager (seeded, thousands of ops): new sequences with prefix hits, chunked
// growth, forks with copy-on-write, frees. A simulated KV store checks every computed slot holds the right token,
// ref counts always equal table references, and every block returns to the pool at the end.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "kvcache/kv_cache_manager.h"

namespace tinfer::kv {
namespace {

struct LiveSeq {
  std::vector<Token> tokens;
  int computed = 0;
};

class KvStress {
 public:
  KvStress(uint32_t seed, KvLayout layout, ReuseOrder reuse = ReuseOrder::kResidentFirst) : rng_(seed) {
    KvCacheConfig c;
    c.reuse = reuse;
    c.num_blocks = 40;
    c.block_size = 4;
    c.prefix_caching = layout == KvLayout::kPaged;
    c.layout = layout;
    kv_ = std::make_unique<KvCacheManager>(c);
    store_.assign(c.num_blocks, std::vector<Token>(c.block_size, -1));
    for (int p = 0; p < 3; ++p)
      for (int i = 0; i < 10; ++i) prefixes_[p].push_back(static_cast<Token>(p * 100 + i));
  }

  void run(int ops) {
    for (int i = 0; i < ops; ++i) {
      const int op = pick(0, 9);
      if (op < 3 || live_.empty())
        add();
      else if (op < 7)
        grow();
      else if (op < 8)
        fork();
      else
        free_one();
      check_invariants();
    }
    for (auto& [id, s] : live_) kv_->free(id);
    live_.clear();
    EXPECT_EQ(kv_->stats().free, kv_->pool().num_blocks());
    EXPECT_EQ(static_cast<int>(kv_->pool().free_list().size()), kv_->pool().num_blocks());
    EXPECT_EQ(kv_->num_sequences(), 0);
  }

  int64_t hits() const { return hit_tokens_; }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  SeqId any_live() {
    auto it = live_.begin();
    std::advance(it, pick(0, static_cast<int>(live_.size()) - 1));
    return it->first;
  }

  // Writes positions [from, to) of the sequence into the simulated KV store.
  void write(SeqId id, int from, int to) {
    const auto& table = kv_->block_table(id);
    const int bs = kv_->block_size();
    for (int p = from; p < to; ++p) store_[table[p / bs]][p % bs] = live_[id].tokens[p];
  }

  void add() {
    LiveSeq s;
    s.tokens = prefixes_[pick(0, 2)];
    s.tokens.resize(pick(1, 10));
    for (int n = pick(0, 6); n > 0; --n) s.tokens.push_back(static_cast<Token>(pick(0, 3)));
    const PrefixHit hit = kv_->match_prefix(s.tokens, 0, static_cast<int>(s.tokens.size()) - 1);
    const int n = pick(1, static_cast<int>(s.tokens.size()) - hit.num_tokens);
    const SeqId id = next_id_++;
    const AllocRequest a{.num_computed = hit.num_tokens, .num_new = n, .hit = &hit, .reserve_tokens = 24};
    if (!kv_->allocate(id, a, nullptr)) return;
    hit_tokens_ += hit.num_tokens;
    s.computed = hit.num_tokens + n;
    live_[id] = std::move(s);
    write(id, hit.num_tokens, live_[id].computed);
    kv_->commit(id, live_[id].tokens, live_[id].computed);
  }

  void grow() {
    const SeqId id = any_live();
    LiveSeq& s = live_[id];
    if (s.computed == static_cast<int>(s.tokens.size())) s.tokens.push_back(static_cast<Token>(pick(0, 3)));
    const int n = pick(1, static_cast<int>(s.tokens.size()) - s.computed);
    std::vector<CowCopy> cow;
    if (!kv_->allocate(id, {.num_computed = s.computed, .num_new = n}, &cow)) return;
    for (const CowCopy& c : cow) store_[c.dst] = store_[c.src];
    write(id, s.computed, s.computed + n);
    s.computed += n;
    kv_->commit(id, s.tokens, s.computed);
  }

  void fork() {
    const SeqId parent = any_live();
    const SeqId child = next_id_++;
    kv_->fork(parent, child);
    live_[child] = live_[parent];
  }

  void free_one() {
    const SeqId id = any_live();
    kv_->free(id);
    live_.erase(id);
  }

  void check_invariants() {
    const BlockPool& pool = kv_->pool();
    std::vector<int> refs(pool.num_blocks(), 0);
    const int bs = kv_->block_size();
    for (const auto& [id, s] : live_) {
      const auto& table = kv_->block_table(id);
      for (BlockId b : table) ++refs[b];
      for (int p = 0; p < s.computed; ++p)
        ASSERT_EQ(store_[table[p / bs]][p % bs], s.tokens[p]) << "seq " << id << " position " << p;
    }
    int free = 0;
    for (BlockId b = 0; b < pool.num_blocks(); ++b) {
      ASSERT_EQ(pool.ref_count(b), refs[b]) << "block " << b;
      free += refs[b] == 0;
    }
    ASSERT_EQ(pool.num_free(), free);
    ASSERT_EQ(static_cast<int>(pool.free_list().size()), free);
  }

  std::mt19937 rng_;
  std::unique_ptr<KvCacheManager> kv_;
  std::vector<std::vector<Token>> store_;  // [block][slot] -> token whose KV the slot holds
  std::vector<Token> prefixes_[3];
  std::map<SeqId, LiveSeq> live_;
  SeqId next_id_ = 1;
  int64_t hit_tokens_ = 0;
};

TEST(KvStress, PagedWithPrefixCachingNeverLeaksOrCorrupts) {
  for (ReuseOrder reuse : {ReuseOrder::kResidentFirst, ReuseOrder::kFreshFirst})
    for (uint32_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(reuse_order_name(reuse));
      KvStress s(seed, KvLayout::kPaged, reuse);
      s.run(4000);
      EXPECT_GT(s.hits(), 0) << "the workload should exercise prefix hits";
    }
}

TEST(KvStress, ReservedLayoutNeverLeaks) {
  KvStress s(7, KvLayout::kReserved);
  s.run(3000);
}

}  // namespace
}  // namespace tinfer::kv

// KV memory planner: bytes per token, blocks from a budget, concurrency at a context length, and the refusal.
#include <gtest/gtest.h>

#include <string>

#include "tinfer/error.h"
#include "kvcache/memory_planner.h"

namespace tinfer::kv {
namespace {

// Llama-2-7B-like: 32 layers, 32 KV heads of 128, f16 -> 2*32*32*128*2 = 512 KiB per token.
const KvShape kLlama7b{32, 32, 128, 2};

TEST(MemoryPlanner, BytesPerToken) {
  EXPECT_EQ(kv_bytes_per_token(kLlama7b), 524288u);
  EXPECT_EQ(kv_bytes_per_token({22, 4, 64, 2}), 2u * 22 * 4 * 64 * 2);  // GQA: kv_heads, not heads
  EXPECT_THROW(kv_bytes_per_token({0, 4, 64, 2}), Error);
}

TEST(MemoryPlanner, PerLayerBytesReplaceTheUniformFormula) {
  // Two layers at 100 and 36 bytes per token (e.g. int8 and int4 with their scales): their sum, whatever
  // bytes_per_elem says; a count that does not match the layers, or a negative size, is refused. A zero size is a
  // layer without KV (its attention skipped by a layer-skip plan): counted as nothing, unless no layer holds any.
  EXPECT_EQ(kv_bytes_per_token({2, 1, 8, 2, {100, 36}}), 136u);
  EXPECT_EQ(plan_kv_memory({2, 1, 8, 2, {100, 36}}, 136 * 16 * 5, 16, 32).num_blocks, 5);
  EXPECT_THROW(kv_bytes_per_token({2, 1, 8, 2, {100}}), Error);
  EXPECT_EQ(kv_bytes_per_token({2, 1, 8, 2, {100, 0}}), 100u);
  EXPECT_THROW(kv_bytes_per_token({2, 1, 8, 2, {0, 0}}), Error);
  EXPECT_THROW(kv_bytes_per_token({2, 1, 8, 2, {100, -4}}), Error);
}

TEST(MemoryPlanner, BlocksCapacityAndConcurrency) {
  const size_t gib = size_t{1} << 30;
  const KvMemoryPlan p = plan_kv_memory(kLlama7b, 4 * gib, 16, 4096);
  EXPECT_EQ(p.bytes_per_block, 16u * 524288u);  // 8 MiB
  EXPECT_EQ(p.num_blocks, 512);                 // 4 GiB / 8 MiB
  EXPECT_EQ(p.capacity_tokens, 8192);
  EXPECT_EQ(p.blocks_per_seq, 256);
  EXPECT_EQ(p.max_concurrency, 2);
  EXPECT_EQ(p.bytes_used, 4 * gib);
}

TEST(MemoryPlanner, RoundsDownBudgetAndUpContext) {
  const KvShape s{1, 1, 4, 2};  // 16 bytes per token, 64 per block of 4
  const KvMemoryPlan p = plan_kv_memory(s, 64 * 10 + 63, 4, 9);
  EXPECT_EQ(p.num_blocks, 10);
  EXPECT_EQ(p.blocks_per_seq, 3);  // 9 tokens -> 3 blocks of 4
  EXPECT_EQ(p.max_concurrency, 3);
  EXPECT_EQ(p.bytes_used, 640u);
}

TEST(MemoryPlanner, RefusesWhenOneSequenceCannotFit) {
  const size_t gib = size_t{1} << 30;
  try {
    plan_kv_memory(kLlama7b, gib, 16, 4096);  // holds 2048 tokens, needs 4096
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("4096 tokens"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2048 tokens"), std::string::npos) << msg;
  }
  EXPECT_THROW(plan_kv_memory(kLlama7b, 100, 16, 1), Error);  // less than one block
  EXPECT_THROW(plan_kv_memory(kLlama7b, gib, 0, 16), Error);
}

// Sliding-window layers: 4 layers of 64 bytes/token (1 kv head, head_dim 8, f32), three windowed (64 tokens),
// 2 sequences, steps of 32 tokens, blocks of 16, context 256.
KvShape windowed_shape(std::vector<uint8_t> layers) {
  KvShape s{.num_layers = 4, .num_kv_heads = 1, .head_dim = 8, .bytes_per_elem = 4};
  s.window = KvWindow{.window_tokens = 64, .layers = std::move(layers), .max_seqs = 2, .max_step_tokens = 32};
  return s;
}

TEST(MemoryPlanner, MixedWindowLayersGetAPoolOfTheirWindows) {
  const KvShape s = windowed_shape({1, 1, 1, 0});
  const KvMemoryPlan p = plan_kv_memory(s, 100000, 16, 256);
  EXPECT_EQ(p.window_blocks_per_seq, 6);  // 64 tokens = 4 blocks, +1 entered part-way, +1 a step opens
  EXPECT_EQ(p.window_blocks, 2 * 6 + 2);   // and one step's 32 new tokens
  EXPECT_EQ(p.window_bytes_per_token, 192u);
  EXPECT_EQ(p.bytes_per_token, 64u);       // the full-attention layer's
  EXPECT_EQ(p.num_blocks, (100000 - 14 * 16 * 192) / (64 * 16));  // 55
  EXPECT_EQ(p.bytes_used, size_t(55 * 1024 + 14 * 16 * 192));
  EXPECT_EQ(p.max_concurrency, 2);  // 55 / 16 = 3 contexts, but the window pool holds 2
  EXPECT_FALSE(p.window_release);
  // Demand: two whole contexts in the full layer, the window pool for the rest -- versus 4 layers x 2 contexts.
  EXPECT_EQ(kv_demand_bytes(s, 16, 256, 2), size_t(2 * 16 * 16 * 64 + 14 * 16 * 192));
  KvShape plain = s;
  plain.window = {};
  EXPECT_EQ(kv_demand_bytes(plain, 16, 256, 2), size_t(2 * 16 * 16 * 256));
  EXPECT_EQ(p.window_seqs, 2);
  // A budget for one whole context and one window: the pool shrinks to one window (and the step) rather than fail.
  const size_t one = 16 * 16 * 64 + (6 + 2) * 16 * 192;
  const KvMemoryPlan small = plan_kv_memory(s, one, 16, 256);
  EXPECT_EQ(small.window_seqs, 1);
  EXPECT_EQ(small.window_blocks, 6 + 2);
  EXPECT_EQ(small.num_blocks, 16);
  EXPECT_EQ(small.max_concurrency, 1);
  try {
    plan_kv_memory(s, one - 1024, 16, 256);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sliding-window layers' pool (8 blocks"), std::string::npos) << e.what();
  }
}

TEST(MemoryPlanner, EveryLayerWindowedIsOnePoolThatGivesBlocksBack) {
  const KvMemoryPlan p = plan_kv_memory(windowed_shape({1, 1, 1, 1}), 100000, 16, 256);
  EXPECT_TRUE(p.window_release);
  EXPECT_EQ(p.window_blocks, 0);
  EXPECT_EQ(p.bytes_per_token, 256u);
  EXPECT_EQ(p.num_blocks, 100000 / 4096);           // 24
  EXPECT_EQ(p.max_concurrency, (24 - 2) / 6);       // 3 windows beside a step's new blocks
  EXPECT_THROW(plan_kv_memory(windowed_shape({1, 1, 1, 1}), 7 * 4096, 16, 256), Error);
  EXPECT_THROW(plan_kv_memory(windowed_shape({1, 1}), 100000, 16, 256), Error);  // a list for 2 of 4 layers
}

TEST(MemoryPlanner, BudgetFromFraction) {
  EXPECT_EQ(kv_budget_from_fraction(1000, 0.9), 900u);
  EXPECT_THROW(kv_budget_from_fraction(1000, 0.0), Error);
  EXPECT_THROW(kv_budget_from_fraction(1000, 1.5), Error);
}

}  // namespace
}  // namespace tinfer::kv

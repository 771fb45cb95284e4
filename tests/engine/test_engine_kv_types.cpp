// The engine over quantized and per-layer KV caches (int8, int4, and plans mixing all four types): capacity
// follows the bytes per token (values and scales), and every serving path gives what one sequence at a time
// gives through the same cache types — batching with chunked prefill, prefix hits, forks (copy-on-write of the
// shared last block) and preemption. Quantization is per (token, kv head), so a token's codes depend on its own
// K/V only: these equalities are exact.
#include <tinfer/engine.h>

#include <gtest/gtest.h>

#include "tinfer/error.h"
#include "engine_test_util.h"

namespace tinfer {
namespace {

using namespace engine_test;

// stories260K: 5 layers, 4 kv heads of head_dim 8. Bytes per token per layer, by hand: K and V of 4 heads;
// f32 2 x 4 x 8 x 4 = 256, f16 128, int8 2 x 4 x (8 + 2-byte scale) = 80, int4 2 x 4 x (4 + 4-byte scale/min) = 64.
constexpr int64_t kStoriesBytes[] = {1280, 640, 400, 320};  // f32, f16, int8, int4: 5 layers each
// Every type in K and in V across the five layers.
const std::vector<KvLayerTypes> kMixed = {{KvDtype::f32, KvDtype::f32},
                                          {KvDtype::f16, KvDtype::int8},
                                          {KvDtype::int8, KvDtype::int4},
                                          {KvDtype::int4, KvDtype::f16},
                                          {KvDtype::int8, KvDtype::int8}};
constexpr int64_t kMixedBytes = 256 + (64 + 40) + (40 + 32) + (32 + 64) + 80;  // 608

EngineConfig mixed_config() {
  EngineConfig c = base_config();
  c.plans.kv_layers = kMixed;
  return c;
}

TEST(EngineKvTypes, CapacityFollowsBytesPerToken) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const int64_t budget = base_config().kv.memory_bytes;
  for (KvDtype t : {KvDtype::f32, KvDtype::f16, KvDtype::int8, KvDtype::int4}) {
    EngineConfig c = base_config();
    c.kv.dtype = t;
    auto e = Engine::create(stories(), c);
    EXPECT_EQ(e->stats().kv_bytes_per_token, kStoriesBytes[int(t)]) << kv_dtype_name(t);
    EXPECT_EQ(e->stats().kv_blocks_total, budget / (16 * kStoriesBytes[int(t)])) << kv_dtype_name(t);
    EXPECT_EQ(e->stats().kv_types, kv_dtype_name(t));
  }
  auto e = Engine::create(stories(), mixed_config());
  EXPECT_EQ(e->stats().kv_bytes_per_token, kMixedBytes);
  EXPECT_EQ(e->stats().kv_blocks_total, budget / (16 * kMixedBytes));
  EXPECT_EQ(e->stats().kv_types, "mixed: 1 f32/f32, 1 f16/int8, 1 int8/int4, 1 int4/f16, 1 int8/int8");
  EngineConfig split = base_config();  // K and V split without a plan
  split.kv.dtype_k = KvDtype::int8, split.kv.dtype_v = KvDtype::int4;
  EXPECT_EQ(Engine::create(stories(), split)->stats().kv_bytes_per_token, 5 * (40 + 32));
  EXPECT_EQ(Engine::create(stories(), split)->stats().kv_types, "k=int8 v=int4");
}

TEST(EngineKvTypes, PlanForAnotherLayerCountIsRefused) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  EngineConfig c = base_config();
  c.plans.kv_layers = {{KvDtype::int8, KvDtype::int8}, {KvDtype::int8, KvDtype::int8}};
  try {
    Engine::create(stories(), c);
    FAIL() << "a 2-layer plan was accepted for a 5-layer model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 layers but the model has 5"), std::string::npos) << e.what();
  }
}

TEST(EngineKvTypes, MixedPlanBatchedChunkedEqualsOneAtATime) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto ps = prompts(5, 512);
  EngineConfig chunked = mixed_config();
  chunked.scheduler.max_batched_tokens = 7;  // prompts split in chunks, decodes mixed in
  const auto batched = run_greedy(stories(), chunked, ps, 24);
  ASSERT_EQ(batched.size(), ps.size());
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(run_greedy(stories(), mixed_config(), {ps[i]}, 24)[0], batched[i]) << i;
  // Uniform int4 stays batch-invariant too; and it does change what is stored (its outputs are not all the
  // f32 cache's), so these runs exercise the quantized paths.
  EngineConfig int4 = base_config();
  int4.kv.dtype = KvDtype::int4;
  const auto b4 = run_greedy(stories(), int4, ps, 24);
  EXPECT_NE(b4, run_greedy(stories(), base_config(), ps, 24));
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(run_greedy(stories(), int4, {ps[i]}, 24)[0], b4[i]) << i;
}

TEST(EngineKvTypes, MixedPlanPrefixHitEqualsMiss) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  expect_prefix_hit_equals_miss(mixed_config());
}

TEST(EngineKvTypes, MixedPlanForksMatchSeededSingles) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  GenerationRequest r;
  r.prompt = prompts(8, 512)[5];  // 41 tokens: the forks share a partly filled last block (copy-on-write)
  r.sampling.temperature = 0.9f;
  r.sampling.seed = 7;
  r.max_tokens = 12;
  r.ignore_eos = true;
  r.n = 3;
  auto e = Engine::create(stories(), mixed_config());
  const Outputs forked = run(*e, {r});
  ASSERT_EQ(forked.begin()->second.size(), 3u);
  EngineConfig nocache = mixed_config();
  nocache.kv.prefix_caching = false;
  for (int i = 0; i < 3; ++i) {
    GenerationRequest s = r;
    s.n = 1;
    s.sampling.seed = 7 + i;
    auto e1 = Engine::create(stories(), nocache);
    EXPECT_EQ(forked.begin()->second[i].tokens, run(*e1, {s}).begin()->second[0].tokens) << "sample " << i;
  }
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
}

TEST(EngineKvTypes, MixedPlanPreemptedEqualsUninterrupted) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  expect_preempted_equals_uninterrupted(mixed_config(), kMixedBytes);
}

}  // namespace
}  // namespace tinfer

// The engine's KV defaults end to end: an EngineConfig left alone caches f16 (every peer's default), its bytes per
// token and capacity are f16's, and its greedy tokens are those of one f16 Session; `--kv-dtype int8` alone gets K
// smoothing calibrated at load (backend/k_smoothing_at_load.h), which k_smooth_at_load = false turns off.
#include <tinfer/engine.h>

#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace tinfer {
namespace {

using namespace engine_test;

// stories260K: 5 layers x K and V x 4 kv heads x head_dim 8 x 2 bytes.
constexpr int64_t kStoriesF16Bytes = 5 * 2 * 4 * 8 * 2;

EngineConfig defaults() {  // only what a small test needs; the KV fields as EngineConfig has them
  EngineConfig c;
  c.threads = 2;
  c.kv.memory_bytes = 8 << 20;
  c.verbose = false;
  return c;
}

TEST(EngineKvDefault, IsF16) {
  EXPECT_EQ(EngineConfig{}.kv.dtype, KvDtype::f16);
  EXPECT_TRUE(EngineConfig{}.kv.k_smooth_at_load);
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  auto e = Engine::create(stories(), defaults());
  EXPECT_EQ(e->stats().kv_types, "f16");  // no smoothing where K is not quantized
  EXPECT_EQ(e->stats().kv_bytes_per_token, kStoriesF16Bytes);
  EXPECT_EQ(e->stats().kv_blocks_total, defaults().kv.memory_bytes / (16 * kStoriesF16Bytes));
}

TEST(EngineKvDefault, GreedyTokensAreThoseOfAnF16Session) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const std::vector<Token> prompt = m->tokenizer().encode("Once upon a time, there was a little", true);
  auto be = create_backend("cpu", *m, BackendOptions{.threads = 2});
  Session s(*be, 256, KvDtype::f16);
  const std::vector<float>* l = &s.feed(prompt);
  std::vector<Token> want;
  for (int i = 0; i < 40; ++i) {
    want.push_back(Token(std::max_element(l->begin(), l->end()) - l->begin()));
    l = &s.feed_token(want.back());
  }
  auto e = Engine::create(stories(), defaults());
  const Outputs out = run(*e, {greedy(prompt, 40)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.begin()->second.at(0).tokens, want);
}

TEST(EngineKvDefault, Int8KGetsSmoothingAtLoadUnlessOff) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  EngineConfig c = defaults();
  c.kv.dtype = KvDtype::int8;
  EXPECT_EQ(Engine::create(stories(), c)->stats().kv_types, "int8 +k-smooth");
  c.kv.k_smooth_at_load = false;
  EXPECT_EQ(Engine::create(stories(), c)->stats().kv_types, "int8");
  EngineConfig v_only = defaults();  // V quantized, K f16: nothing to smooth
  v_only.kv.dtype_v = KvDtype::int8;
  EXPECT_EQ(Engine::create(stories(), v_only)->stats().kv_types, "k=f16 v=int8");
  EngineConfig plan = defaults();  // a plan says whether K is smoothed: none added to one without factors
  plan.plans.kv_layers.assign(5, KvLayerTypes{KvDtype::int8, KvDtype::int8});
  EXPECT_EQ(Engine::create(stories(), plan)->stats().kv_types, "int8");
}

}  // namespace
}  // namespace tinfer

// The default model (SmolLM2-135M-Instruct Q4_1), when the set-up has fetched it: loads, tokenizes
// round trip, greedy chat answer non-empty and deterministic, fast vs reference first logits.
#include <gtest/gtest.h>

#include <cmath>

#include "common/test_env.h"
#include "core/thread_pool.h"
#include "engine/generate.h"
#include "backend/cpu/cpu_forward.h"
#include "backend/cpu/reference_forward.h"

namespace tinfer {
namespace {

class DefaultModel : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = test::default_model();
    if (path_.empty()) GTEST_SKIP() << "fixture absent: default model (run scripts/setup.sh)";
    model_ = Model::load(path_);
  }
  std::string path_;
  std::unique_ptr<Model> model_;
};

TEST_F(DefaultModel, LoadsWithExpectedShape) {
  const ModelConfig& c = model_->config();
  EXPECT_EQ(c.arch, "llama");
  EXPECT_EQ(c.n_layers, 30);
  EXPECT_EQ(c.dim, 576);
  EXPECT_EQ(c.n_heads, 9);
  EXPECT_EQ(c.n_kv_heads, 3);
  EXPECT_EQ(c.n_vocab, 49152);
  EXPECT_TRUE(c.tied_output);
}

TEST_F(DefaultModel, TokenizerRoundTrip) {
  const std::string text = "Hello, world! The year 2024 had 366 days.\n  Indented — ünïcödé ✓";
  auto ids = model_->tokenizer().encode(text, false);
  EXPECT_EQ(model_->tokenizer().decode(ids), text);
}

TEST_F(DefaultModel, GreedyChatAnswerIsNonEmptyAndDeterministic) {
  ThreadPool pool(2);
  CpuForward fwd(*model_, pool);
  const Tokenizer& tok = model_->tokenizer();
  std::string prompt = apply_chat_template(model_->chat_template(), {{"user", "What is the capital of France?"}}, true);
  auto ids = tok.encode(prompt, false, true);
  auto answer = [&] {
    Session s(fwd, 512);
    GenerateOptions o;
    o.max_tokens = 24;
    o.sampling.temperature = 0;
    std::string out;
    generate(s, tok, ids, o, [&](int32_t t) { return out += tok.token_bytes(t), true; });
    return out;
  };
  std::string a = answer(), b = answer();
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  // No assertion on the words: the first answer token of this prompt is a near-tie that int8
  // activation rounding can flip (the perplexity A/B in docs/BENCHMARKS.md measures quality).
}

TEST_F(DefaultModel, FastMatchesReferenceOnFirstLogits) {
  auto ids = model_->tokenizer().encode("The quick brown fox", false);
  auto want = ReferenceForward(*model_).logits(ids, {int64_t(ids.size()) - 1})[0];
  ThreadPool pool(2);
  CpuForward fwd(*model_, pool);
  Session s(fwd, 32);
  const auto& got = s.feed(ids);
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
  // Weights are identical on both sides; the fast side quantizes activations to int8 per 32-block.
  // SmolLM2's residual stream has large outlier channels, so this costs ~1e-2 NMSE on raw logits
  // while the perplexity moves by ~0.1% (docs/BENCHMARKS.md). The figure is chaotic in the last bits of
  // the fp32 arithmetic (an ulp flips an activation's int8 rounding, and outlier scales amplify it):
  // changes that leave every kernel within its own test tolerance moved it between 0.019 and 0.044
  // (attention's exp polynomial ending fma(p*r, r, r+1) vs fma(p*r, r, r)+1: 0.019 vs 0.030; std::exp in
  // attention: 0.035; the AVX2 tables: 0.038-0.044), so the bound sits above that spread.
  EXPECT_LT(num / den, 6e-2);
  auto argmax = [](const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); };
  EXPECT_EQ(argmax(got), argmax(want));
}

}  // namespace
}  // namespace tinfer

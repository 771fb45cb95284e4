// Prompt and token entropies (GenerationRequest::report_entropy, what routing between models reads): the engine's
// numbers equal a direct computation from ReferenceForward's logits, across prefill chunks, with the prefix cache
// warm, and reporting them changes no output.
#include <gtest/gtest.h>
#include <tinfer/engine.h>

#include <cmath>
#include <map>
#include <random>

#include "common/test_env.h"
#include "engine/entropy.h"
#include "engine_test_util.h"
#include "model/model.h"
#include "backend/cpu/reference_forward.h"

namespace tinfer {
namespace {

using namespace engine_test;

double entropy_double(const std::vector<float>& x) {
  double m = x[0];
  for (float v : x) m = std::max(m, double(v));
  double z = 0, zx = 0;
  for (float v : x) {
    const double e = std::exp(double(v) - m);
    z += e;
    zx += e * (double(v) - m);
  }
  return std::log(z) - zx / z;
}

TEST(Entropy, KernelEqualsDoubleComputation) {
  std::mt19937 rng(7);
  std::vector<float> scratch;
  for (int n : {2, 17, 512, 49152}) {
    for (float scale : {0.0f, 1.0f, 8.0f}) {
      std::normal_distribution<float> d(0.0f, scale);
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = d(rng);
      EXPECT_NEAR(next_token_entropy(x.data(), n, scratch), entropy_double(x), 2e-4 * std::log(double(n)) + 1e-5)
          << "n " << n << " scale " << scale;
    }
  }
  std::vector<float> uniform(100, 3.0f);
  EXPECT_NEAR(next_token_entropy(uniform.data(), 100, scratch), std::log(100.0), 1e-5);
}

struct Reported {
  float prompt_entropy = NAN;
  std::vector<float> token_entropy;
  std::vector<Token> tokens;
  int cached = 0;
};

Reported run_one(Engine& e, GenerationRequest r) {
  Reported out;
  e.add_request(std::move(r), [&](const TokenEvent& ev) {
    if (!ev.has_token) return;
    if (out.tokens.empty()) out.prompt_entropy = ev.prompt_entropy;
    EXPECT_TRUE(std::isnan(out.prompt_entropy) ? std::isnan(ev.prompt_entropy)
                                               : ev.prompt_entropy == out.prompt_entropy);  // the same on every event
    out.tokens.push_back(ev.token);
    out.token_entropy.push_back(ev.entropy);
    out.cached = std::max(out.cached, ev.cached_prompt_tokens);
  });
  while (e.has_work()) e.step();
  return out;
}

TEST(EngineEntropy, PromptAndTokenEntropiesEqualReferenceAcrossChunksAndCacheHits) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const ReferenceForward ref(*m);
  EngineConfig c = base_config();
  c.scheduler.max_batched_tokens = 16;  // the 41-token prompt is prefilled in three chunks
  auto e = Engine::create(std::move(m), c);
  std::vector<Token> prompt = prompts(6, 512)[5];
  ASSERT_EQ(prompt.size(), 41u);

  GenerationRequest r = greedy(prompt, 6);
  r.report_entropy = true;
  const Reported a = run_one(*e, r);
  ASSERT_EQ(a.tokens.size(), 6u);

  // Direct: every prompt position's next-token distribution from the reference forward, then the mean.
  std::vector<Token> all = prompt;
  all.insert(all.end(), a.tokens.begin(), a.tokens.end() - 1);
  const auto rows = ref.logits(all);
  double sum = 0;
  for (size_t p = 0; p < prompt.size(); ++p) sum += entropy_double(rows[p]);
  const double want = sum / double(prompt.size());
  EXPECT_GT(want, 0.1);
  EXPECT_NEAR(a.prompt_entropy, want, 2e-3 * want);
  for (size_t t = 0; t < a.tokens.size(); ++t) {  // token t was drawn from row prompt.size() - 1 + t
    const double h = entropy_double(rows[prompt.size() - 1 + t]);
    EXPECT_NEAR(a.token_entropy[t], h, 2e-3 * h + 1e-4) << "token " << t;
  }

  // The prompt's blocks are cached now: a plain request reuses them, an entropy request recomputes every row.
  const Reported plain = run_one(*e, greedy(prompt, 6));
  EXPECT_GT(plain.cached, 0);
  EXPECT_EQ(plain.tokens, a.tokens);  // reporting changes no output
  EXPECT_TRUE(std::isnan(plain.prompt_entropy));
  EXPECT_TRUE(std::isnan(plain.token_entropy[0]));
  const Reported again = run_one(*e, r);
  EXPECT_EQ(again.cached, 0);
  EXPECT_EQ(again.tokens, a.tokens);
  EXPECT_FLOAT_EQ(again.prompt_entropy, a.prompt_entropy);
}

// A pool of 10 blocks for six ~70-token requests: requests are preempted (some in the middle of their prompt) and
// recomputed; every prompt's entropy and every output equal an uninterrupted run's.
TEST(EngineEntropy, PreemptedPrefillReportsTheSameEntropy) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  auto collect = [](std::unique_ptr<Engine> e, EngineStats* st) {
    std::map<RequestId, Reported> out;
    for (const auto& p : prompts(6, 512)) {
      GenerationRequest r = greedy(p, 40);
      r.report_entropy = true;
      e->add_request(r, [&out](const TokenEvent& ev) {
        Reported& o = out[ev.id];
        if (!ev.has_token) return;
        if (o.tokens.empty()) o.prompt_entropy = ev.prompt_entropy;
        o.tokens.push_back(ev.token);
      });
    }
    while (e->has_work()) e->step();
    *st = e->stats();
    return out;
  };
  EngineConfig tiny = base_config();
  tiny.scheduler.max_model_len = 128;
  tiny.kv.memory_bytes = m->config().kv_bytes_per_token(4) * 160;
  EngineStats st_tiny, st_big;
  const auto pre = collect(Engine::create(std::move(m), tiny), &st_tiny);
  const auto ref = collect(Engine::create(stories(), base_config()), &st_big);
  EXPECT_GT(st_tiny.preemptions, 0);
  EXPECT_EQ(st_big.preemptions, 0);
  ASSERT_EQ(pre.size(), 6u);
  for (const auto& [id, r] : ref) {
    EXPECT_EQ(pre.at(id).tokens, r.tokens) << id;
    EXPECT_NEAR(pre.at(id).prompt_entropy, r.prompt_entropy, 1e-4 * r.prompt_entropy) << id;
  }
}

TEST(EngineEntropy, ParallelSamplesReportTheSharedPromptAndBeamSearchIsRefused) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  auto e = Engine::create(std::move(m), base_config());
  GenerationRequest r = greedy(prompts(3, 512)[2], 4);
  r.report_entropy = true;
  r.n = 3;
  r.sampling.temperature = 0.8f;
  r.sampling.seed = 5;
  std::vector<float> first(3, NAN);
  e->add_request(r, [&](const TokenEvent& ev) {
    if (ev.has_token && std::isnan(first[size_t(ev.index)])) first[size_t(ev.index)] = ev.prompt_entropy;
    if (ev.has_token) {
      EXPECT_FALSE(std::isnan(ev.entropy));
    }
  });
  while (e->has_work()) e->step();
  EXPECT_FALSE(std::isnan(first[0]));
  EXPECT_EQ(first[0], first[1]);
  EXPECT_EQ(first[0], first[2]);

  GenerationRequest b = greedy(prompts(1, 512)[0], 4);
  b.use_beam_search = true;
  b.n = 2;
  b.report_entropy = true;
  EXPECT_THROW(e->resolve(b), RequestError);
}

}  // namespace
}  // namespace tinfer

// Speculative decoding through the engine (stories260K, whose greedy stories repeat themselves, so prompt
// lookup finds drafts that are partly right): the committed tokens equal non-speculative decoding token for
// token for every K, adaptive or fixed, through chunked prefill, preemption, prefix hits, static batching,
// penalties, stop ids, seeded sampling and parallel samples; aborts and completions return every block; the
// per-request opt-out drafts nothing; the acceptance statistics add up.
#include <tinfer/engine.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "common/test_env.h"
#include "tinfer/error.h"
#include "engine/decoding/speculator.h"
#include "model/model.h"
#include "text/tokenizer/tokenizer.h"
#include "engine_test_util.h"

namespace tinfer {
namespace {

using namespace engine_test;

EngineConfig spec_config(int k, bool adaptive) {
  EngineConfig c = base_config();
  c.spec.mode = SpecMode::kNgram;
  c.spec.num_tokens = k;
  c.spec.adaptive = adaptive;
  c.spec.disable_batch = 0;  // draft at every batch size: these tests check exactness, not the policy
  return c;
}


TEST(EngineSpec, GreedyEqualsPlainForEveryK) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto ps = prompts(6, 512);
  const auto want = run_greedy(stories(), base_config(), ps, 60);
  for (int k : {1, 2, 4, 7}) {
    for (bool adaptive : {false, true}) {
      EngineStats st;
      EXPECT_EQ(run_greedy(stories(), spec_config(k, adaptive), ps, 60, &st), want) << "K " << k;
      EXPECT_GT(st.spec_drafted, 0) << "K " << k;
      EXPECT_GT(st.spec_accepted, 0) << "K " << k;           // some drafts are right ...
      EXPECT_LT(st.spec_accepted, st.spec_drafted) << "K " << k;  // ... and some are rolled back
      EXPECT_LE(st.spec_drafted, int64_t(k) * st.spec_steps);
      // Fewer steps than tokens: accepted drafts commit several tokens a step.
      EXPECT_LT(st.steps, 6 * 60) << "K " << k;
      EXPECT_EQ(st.spec_mode, "ngram");
    }
  }
}

TEST(EngineSpec, GreedyEqualsPlainThroughChunkingStaticAndPreemption) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto ps = prompts(5, 512);
  const auto want = run_greedy(stories(), base_config(), ps, 40);
  EngineConfig chunked = spec_config(4, false);
  chunked.scheduler.max_batched_tokens = 7;  // drafts compete with prefill chunks for a tiny budget
  EXPECT_EQ(run_greedy(stories(), chunked, ps, 40), want);
  EngineConfig stat = spec_config(4, false);
  stat.batching = BatchingMode::kStatic;
  stat.scheduler.max_seqs = 2;
  EXPECT_EQ(run_greedy(stories(), stat, ps, 40), want);
  EngineConfig padded = spec_config(3, false);
  padded.batching = BatchingMode::kStaticPadded;
  padded.scheduler.max_seqs = 3;
  EXPECT_EQ(run_greedy(stories(), padded, ps, 40), want);
  // A pool too small for everyone: drafts never preempt, requests do, and the outputs do not change.
  expect_preempted_equals_uninterrupted(spec_config(4, false), m->config().kv_bytes_per_token(4));
}

TEST(EngineSpec, PrefixHitEqualsMissWithDrafts) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  expect_prefix_hit_equals_miss(spec_config(4, false));
}

// Penalties see every kept token, in order, so a penalised greedy run is still identical; stop ids end the
// request at the same token even when it arrives inside a run of accepted drafts; max_tokens is exact.
TEST(EngineSpec, PenaltiesStopIdsAndLimitsMatchPlain) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto ps = prompts(4, 512);
  auto with = [&](const EngineConfig& c, auto&& edit) {
    auto e = Engine::create(stories(), c);
    std::vector<GenerationRequest> reqs;
    for (const auto& p : ps) reqs.push_back(edit(greedy(p, 50)));
    Outputs o = run(*e, reqs);
    EXPECT_EQ(e->stats().kv_blocks_used, 0);
    return o;
  };
  auto penalised = [](GenerationRequest r) {
    r.sampling.repetition_penalty = 1.1f;
    r.sampling.presence_penalty = 0.3f;
    r.sampling.frequency_penalty = 0.2f;
    return r;
  };
  const Outputs plain_pen = with(base_config(), penalised);
  const Outputs spec_pen = with(spec_config(4, false), penalised);
  ASSERT_EQ(tokens_of(spec_pen), tokens_of(plain_pen));
  // Stop at the 12th token of each plain output (a token the stories repeat, so drafts often carry it).
  const Outputs plain = with(base_config(), [](GenerationRequest r) { return r; });
  std::vector<Token> stops;
  for (const auto& [id, s] : plain) stops.push_back(s[0].tokens.at(11));
  size_t i = 0;
  auto stopping = [&](GenerationRequest r) {
    r.stop_token_ids = {stops[i++ % stops.size()]};
    return r;
  };
  const Outputs plain_stop = with(base_config(), stopping);
  i = 0;
  const Outputs spec_stop = with(spec_config(7, false), stopping);
  ASSERT_EQ(plain_stop.size(), spec_stop.size());
  for (auto a = plain_stop.begin(), b = spec_stop.begin(); a != plain_stop.end(); ++a, ++b) {
    EXPECT_EQ(a->second[0].tokens, b->second[0].tokens);
    EXPECT_EQ(a->second[0].reason, b->second[0].reason);
    EXPECT_EQ(b->second[0].reason, FinishReason::kStop);
    EXPECT_LE(b->second[0].tokens.size(), 12u);
  }
}

// Seeded sampling: the sampler's own draw decides every position and a draft is kept when it equals it, so a
// seeded sample is the same token for token with and without speculation (and n > 1 forks too).
TEST(EngineSpec, SeededSamplingEqualsPlain) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  std::vector<GenerationRequest> reqs;
  for (const auto& p : prompts(4, 512)) {
    GenerationRequest r = greedy(p, 48);
    r.sampling.temperature = 0.7f;
    r.sampling.top_p = 0.95f;
    r.sampling.seed = 1234 + p.size();
    reqs.push_back(r);
  }
  reqs.back().n = 3;
  auto plain = Engine::create(stories(), base_config());
  auto spec = Engine::create(stories(), spec_config(4, false));  // fixed K: drafts every step
  const Outputs a = run(*plain, reqs), b = run(*spec, reqs);
  ASSERT_EQ(a.size(), b.size());
  for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y) {
    ASSERT_EQ(x->second.size(), y->second.size());
    for (size_t s = 0; s < x->second.size(); ++s) EXPECT_EQ(x->second[s].tokens, y->second[s].tokens);
  }
  EXPECT_GT(spec->stats().spec_accepted, 0);
  EXPECT_EQ(spec->stats().kv_blocks_used, 0);
}

TEST(EngineSpec, OptOutDraftsNothingAndAbortReturnsBlocks) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto ps = prompts(4, 512);
  {
    auto e = Engine::create(stories(), spec_config(4, false));
    std::vector<GenerationRequest> reqs;
    for (const auto& p : ps) {
      reqs.push_back(greedy(p, 40));
      reqs.back().speculative = false;
    }
    EXPECT_EQ(tokens_of(run(*e, reqs)), run_greedy(stories(), base_config(), ps, 40));
    EXPECT_EQ(e->stats().spec_drafted, 0);
  }
  // Abort two of four mid-way: the other two finish as they would alone, and the pool ends empty.
  EngineConfig c = spec_config(4, false);
  c.kv.prefix_caching = false;
  auto e = Engine::create(stories(), c);
  Outputs out;
  std::vector<RequestId> ids;
  for (const auto& p : ps)
    ids.push_back(e->add_request(greedy(p, 80), [&](const TokenEvent& ev) {
      auto& v = out[ev.id];
      v.resize(1);
      if (ev.has_token) v[0].tokens.push_back(ev.token);
      if (ev.finished) v[0].reason = ev.finish_reason;
    }));
  for (int i = 0; i < 12; ++i) e->step();
  EXPECT_GT(e->stats().spec_drafted, 0);
  e->abort(ids[0]);
  e->abort(ids[2]);
  while (e->has_work()) e->step();
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
  EXPECT_EQ(out[ids[0]][0].reason, FinishReason::kAbort);
  const auto alone = run_greedy(stories(), base_config(), {ps[1], ps[3]}, 80);
  EXPECT_EQ(out[ids[1]][0].tokens, alone[0]);
  EXPECT_EQ(out[ids[3]][0].tokens, alone[1]);
}

// The default model (SmolLM2-135M-Instruct Q4_1), when the set-up has fetched it: prompt lookup on prompts
// that quote a passage, batched, fixed K and adaptive, gives plain greedy decoding's tokens.
TEST(EngineSpec, DefaultModelGreedyEqualsPlain) {
  const std::string path = test::default_model();
  if (path.empty()) GTEST_SKIP() << "fixture absent: default model (run scripts/setup.sh)";
  auto load = [&] { return Model::load(path); };
  auto m = load();
  std::vector<std::vector<Token>> ps;
  for (const char* text : {"Text: Once upon a time, there was a little girl named Lily. She loved to play outside.\n"
                           "The same text, copied exactly:\nOnce upon",
                           "The quick brown fox jumps over the lazy dog. The quick brown fox",
                           "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n"})
    ps.push_back(m->tokenizer().encode(text, m->tokenizer().add_bos_by_default()));
  EngineConfig c = base_config();
  c.kv.memory_bytes = 64 << 20;
  c.scheduler.max_model_len = 512;
  const auto want = run_greedy(load(), c, ps, 40);
  for (bool adaptive : {false, true}) {
    EngineConfig s = c;
    s.spec = spec_config(4, adaptive).spec;
    EngineStats st;
    EXPECT_EQ(run_greedy(load(), s, ps, 40, &st), want) << "adaptive " << adaptive;
    EXPECT_GT(st.spec_accepted, 0);
  }
}

// Adaptive K: more drafts for a request that keeps them, none once acceptance cannot pay for a row, fewer as
// the batch grows, a probe when one is due.
TEST(EngineSpec, AdaptiveKFollowsAcceptanceAndBatch) {
  SpecConfig c;
  c.mode = SpecMode::kNgram;
  c.num_tokens = 6;
  c.row_cost = 0.12;
  Speculator s(c, make_ngram_drafter(1, 3));
  auto k1 = [&](double a, bool probe = false, int batch = 1) {
    const bool due[1] = {probe};
    return s.allocate(std::vector<double>{a}, std::span<const bool>(due, 1), batch)[0];
  };
  EXPECT_EQ(k1(0.95), 6);
  EXPECT_GT(k1(0.8), k1(0.5));
  EXPECT_GE(k1(0.5), 1);
  EXPECT_EQ(k1(0.08), 0);
  EXPECT_EQ(k1(0.08, true), 1);
  EXPECT_GT(k1(0.7, false, 1), k1(0.7, false, 12));
  EXPECT_EQ(k1(0.4, false, 15), 0);
  // The best of two requests gets its rows first.
  const bool none[2] = {false, false};
  const std::vector<int> two = s.allocate(std::vector<double>{0.3, 0.9}, std::span<const bool>(none, 2), 2);
  EXPECT_GT(two[1], two[0]);
  // Fixed K without the model.
  c.adaptive = false;
  Speculator fixed(c, make_ngram_drafter(1, 3));
  EXPECT_EQ(fixed.allocate(std::vector<double>{0.01}, std::span<const bool>(none, 1), 1)[0], 6);
}

// A draft model: stories260K drafting for itself keeps nearly every draft (the batched draft forward and the
// verify rows may differ only in rounding), and the output is still exactly plain greedy decoding.
TEST(EngineSpec, DraftModelGreedyEqualsPlain) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto ps = prompts(5, 512);
  const auto want = run_greedy(stories(), base_config(), ps, 40);
  for (int k : {1, 3, 5}) {
    EngineConfig c = spec_config(k, false);
    c.spec.mode = SpecMode::kDraft;
    c.spec.draft_model = test::shared_file("models/stories260K.gguf");
    EngineStats st;
    EXPECT_EQ(run_greedy(stories(), c, ps, 40, &st), want) << "K " << k;
    EXPECT_GT(st.spec_drafted, 0);
    EXPECT_GT(st.spec_acceptance(), 0.95) << "K " << k;
    EXPECT_EQ(st.spec_mode, "draft");
  }
  // Chunked prefill and preemption with a draft model (its cache follows the target's rollbacks).
  EngineConfig c = spec_config(4, true);
  c.spec.mode = SpecMode::kDraft;
  c.spec.draft_model = test::shared_file("models/stories260K.gguf");
  EngineConfig small_budget = c;
  small_budget.scheduler.max_batched_tokens = 9;
  EXPECT_EQ(run_greedy(stories(), small_budget, ps, 40), want);
  expect_preempted_equals_uninterrupted(c, m->config().kv_bytes_per_token(4));
}

// Self-draft: the target's first 3 of 5 layers propose; some drafts are kept, some rolled back, output exact.
TEST(EngineSpec, SelfDraftGreedyEqualsPlain) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto ps = prompts(5, 512);
  const auto want = run_greedy(stories(), base_config(), ps, 40);
  EngineConfig c = spec_config(3, false);
  c.spec.mode = SpecMode::kSelf;
  c.spec.self_layers = 3;
  EngineStats st;
  EXPECT_EQ(run_greedy(stories(), c, ps, 40, &st), want);
  EXPECT_GT(st.spec_accepted, 0);
  EXPECT_LT(st.spec_accepted, st.spec_drafted);
  c.spec.self_layers = 5;  // all layers is not a draft
  EXPECT_THROW(Engine::create(stories(), c), Error);
}

// A draft whose tokenizer is not the target's is refused at start, naming the difference.
TEST(EngineSpec, DraftWithAnotherTokenizerIsRefused) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const std::string path = ::testing::TempDir() + "/spec_other_tokenizer.gguf";
  {
    SynthSpec s;  // a synthetic model: its own vocabulary
    const std::vector<uint8_t> bytes = synthesize_model_bytes(s);
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  EngineConfig c = spec_config(4, true);
  c.spec.mode = SpecMode::kDraft;
  c.spec.draft_model = path;
  try {
    Engine::create(stories(), c);
    FAIL() << "a draft with another tokenizer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer differs from the target's"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

// The row-cost model recovers b / a from noisy step times once rows vary, and reports the prior before that.
TEST(EngineSpec, StepCostModelMeasuresTheRowPrice) {
  StepCostModel m(0.15);
  for (int i = 0; i < 40; ++i) m.observe(1, 0.010);
  EXPECT_FALSE(m.fitted());  // rows never varied
  EXPECT_DOUBLE_EQ(m.row_cost(), 0.15);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> noise(-0.0004, 0.0004);
  for (int i = 0; i < 400; ++i) {
    const int rows = 1 + i % 5;
    m.observe(rows, 0.010 + 0.0025 * (rows - 1) + noise(rng));  // a = 10 ms, b = 2.5 ms: c = 0.25
  }
  EXPECT_TRUE(m.fitted());
  EXPECT_NEAR(m.row_cost(), 0.25, 0.02);
  m.observe(0, 1.0), m.observe(3, -1.0);  // ignored
  EXPECT_NEAR(m.row_cost(), 0.25, 0.02);
}

// A drafter whose drafts are rejected lowers the acceptance new requests start from, so they draft less.
TEST(EngineSpec, NewRequestsStartFromTheRecentAcceptance) {
  SpecConfig c;
  c.mode = SpecMode::kNgram;
  Speculator s(c, make_ngram_drafter(1, 3));
  EXPECT_DOUBLE_EQ(s.acceptance(99), 0.5);
  for (kv::SeqId q = 1; q <= 20; ++q) s.record(q, 4, 0);
  EXPECT_LT(s.global_acceptance(), 0.1);
  EXPECT_LT(s.acceptance(99), 0.1);
  const bool no[1] = {false};
  EXPECT_EQ(s.allocate(std::vector<double>{s.acceptance(99)}, std::span<const bool>(no, 1), 1)[0], 0);
}

TEST(EngineSpec, ConfigErrorsAreNamed) {
  EngineConfig c = base_config();
  c.spec.mode = SpecMode::kDraft;
  auto errs = c.validate();
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("--draft-model"), std::string::npos);
  c.spec.mode = SpecMode::kSelf;
  c.spec.num_tokens = 0;
  EXPECT_EQ(c.validate().size(), 2u);
  EXPECT_EQ(parse_spec_mode("ngram"), SpecMode::kNgram);
  EXPECT_FALSE(parse_spec_mode("eagle").has_value());
}

}  // namespace
}  // namespace tinfer

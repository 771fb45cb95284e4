// Engine tests with real weights (stories260K) and a tiny synthetic model: batched == one at a time == the
// batch-1 generate() path, prefix hit == miss, chunked == unchunked, preempted == uninterrupted, static ==
// continuous, n > 1 forks share blocks and match n = 1 runs seeded seed + i, abort frees blocks, caps, errors.
#include <tinfer/engine.h>

#include <gtest/gtest.h>

#include <map>

#include "common/test_env.h"
#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/kv_budget.h"
#include "backend/backend.h"
#include "model/model.h"
#include "model/synth/synth.h"
#include "engine_test_util.h"

namespace tinfer {
namespace {

using namespace engine_test;

TEST(Engine, StoriesBatchedEqualsOneAtATimeAndGenerate) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto ps = prompts(6, 512);
  const auto batched = run_greedy(stories(), base_config(), ps, 24);
  ASSERT_EQ(batched.size(), ps.size());
  // One at a time through a fresh engine each.
  for (size_t i = 0; i < ps.size(); ++i) {
    const auto single = run_greedy(stories(), base_config(), {ps[i]}, 24);
    EXPECT_EQ(single[0], batched[i]) << "prompt " << i;
  }
  // The batch-1 Session/generate() path.
  ThreadPool pool(2);
  auto fwd = create_backend("cpu", *m, BackendOptions{.pool = &pool});
  for (size_t i = 0; i < ps.size(); ++i) {
    Session session(*fwd, 512);
    GenerateOptions o;
    o.max_tokens = 24;
    o.sampling.temperature = 0;
    o.stop_at_eog = false;
    std::vector<Token> got;
    generate(session, m->tokenizer(), ps[i], o, [&](int32_t t) { return got.push_back(t), true; });
    EXPECT_EQ(got, batched[i]) << "prompt " << i;
  }
}

TEST(Engine, PrefixHitEqualsMiss) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  expect_prefix_hit_equals_miss(base_config());
}

TEST(Engine, ChunkedEqualsUnchunkedAndStaticEqualsContinuous) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto ps = prompts(5, 512);
  EngineConfig chunked = base_config();
  chunked.scheduler.max_batched_tokens = 7;  // every prompt split in chunks, decodes mixed in
  EngineConfig whole = base_config();
  whole.scheduler.chunked_prefill = false;
  whole.scheduler.max_model_len = 256;
  whole.scheduler.max_batched_tokens = 256;
  EngineConfig stat = base_config();
  stat.batching = BatchingMode::kStatic;
  stat.scheduler.max_seqs = 2;
  const auto a = run_greedy(stories(), chunked, ps, 20);
  EXPECT_EQ(a, run_greedy(stories(), whole, ps, 20));
  EXPECT_EQ(a, run_greedy(stories(), stat, ps, 20));
}

// static-padded: requests with different output caps share a batch; the finished ones keep being
// computed as padding rows (sampled by the engine without an owner) and every output equals continuous.
TEST(Engine, PaddedStaticEqualsContinuousAndComputesPadding) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto ps = prompts(5, 512);
  auto run_mixed = [&](EngineConfig c, EngineStats* st) {
    auto e = Engine::create(stories(), c);
    std::vector<GenerationRequest> reqs;
    for (size_t i = 0; i < ps.size(); ++i) reqs.push_back(greedy(ps[i], 4 + 6 * int(i)));  // 4, 10, ... 28
    auto out = tokens_of(run(*e, reqs));
    *st = e->stats();
    EXPECT_EQ(st->kv_blocks_used, 0);
    return out;
  };
  EngineConfig padded = base_config();
  padded.batching = BatchingMode::kStaticPadded;
  padded.scheduler.max_seqs = 3;
  EngineStats cont_st, pad_st;
  const auto want = run_mixed(base_config(), &cont_st);
  EXPECT_EQ(run_mixed(padded, &pad_st), want);
  EXPECT_EQ(cont_st.padding_tokens, 0);
  // Batch {0,1,2} runs 16 decode steps for request 2; 0 and 1 pad 12 and 6 of them. Batch {3,4}: 3 pads 6.
  EXPECT_EQ(pad_st.padding_tokens, 12 + 6 + 6);
}

// An f16 cache: twice the tokens in the same budget, and still exact batching (N requests together
// give what each gives alone through the same f16 cache).
TEST(Engine, F16CacheDoublesCapacityAndBatchesExactly) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const auto ps = prompts(4, 512);
  EngineConfig f16 = base_config();
  f16.kv.dtype = KvDtype::f16;
  EngineStats st32, st16;
  run_greedy(stories(), base_config(), {ps[0]}, 4, &st32);
  const auto batched = run_greedy(stories(), f16, ps, 20, &st16);
  EXPECT_GE(st16.kv_capacity_tokens, 2 * st32.kv_capacity_tokens);  // (whole blocks: floor(budget / block))
  EXPECT_LE(st16.kv_capacity_tokens, 2 * st32.kv_capacity_tokens + 16);
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(run_greedy(stories(), f16, {ps[i]}, 20)[0], batched[i]) << i;
  KvDtype parsed = KvDtype::f16;  // names are parsed once, at the edge
  EXPECT_FALSE(parse_kv_dtype("q4", &parsed));
  EXPECT_TRUE(parse_kv_dtype("f32", &parsed) && parsed == KvDtype::f32);
}

TEST(Engine, PreemptedEqualsUninterrupted) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  expect_preempted_equals_uninterrupted(base_config(), m->config().kv_bytes_per_token(4));
}

TEST(Engine, ReservedLayoutSameOutputsMoreWaste) {
  const auto ps = prompts(4, 512);
  EngineConfig reserved = base_config();
  reserved.kv.layout = kv::KvLayout::kReserved;
  // After the first step the reserved layout holds every request's whole prompt + max_tokens up front.
  auto first_step = [&](const EngineConfig& c) {
    auto e = Engine::create(synth_model(), c);
    for (const auto& p : ps) e->add_request(greedy(p, 40), nullptr);
    e->step();
    return e->stats();
  };
  const EngineStats p1 = first_step(base_config()), r1 = first_step(reserved);
  EXPECT_GT(r1.kv_blocks_used, p1.kv_blocks_used);
  EXPECT_GT(r1.kv_waste_slots, p1.kv_waste_slots);
  EXPECT_EQ(run_greedy(synth_model(), base_config(), ps, 12), run_greedy(synth_model(), reserved, ps, 12));
}

TEST(Engine, ParallelSamplesShareBlocksAndMatchSeededSingles) {
  const std::vector<Token> prompt = prompts(8, 512).back();
  GenerationRequest r;
  r.prompt = prompt;
  r.sampling.temperature = 0.9f;
  r.sampling.seed = 42;
  r.max_tokens = 10;
  r.ignore_eos = true;
  r.n = 4;
  auto e = Engine::create(synth_model(), base_config());
  const Outputs forked = run(*e, {r});
  const int forked_peak = e->stats().kv_blocks_peak;
  ASSERT_EQ(forked.begin()->second.size(), 4u);
  std::vector<GenerationRequest> singles;
  for (int i = 0; i < 4; ++i) {
    GenerationRequest s = r;
    s.n = 1;
    s.sampling.seed = 42 + i;
    singles.push_back(s);
  }
  EngineConfig nocache = base_config();
  nocache.kv.prefix_caching = false;
  auto e2 = Engine::create(synth_model(), nocache);
  const Outputs sep = run(*e2, singles);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(forked.begin()->second[i].tokens.size(), 10u);
    EXPECT_EQ(forked.begin()->second[i].tokens, std::next(sep.begin(), i)->second[0].tokens) << "sample " << i;
  }
  EXPECT_LT(forked_peak, e2->stats().kv_blocks_peak);
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
  // Deterministic by seed: a second run of the same request gives the same four samples.
  const Outputs again = run(*e, {r});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(again.begin()->second[i].tokens, forked.begin()->second[i].tokens);
}

TEST(Engine, ParallelSamplesBeyondMaxSeqsStillMatch) {
  // max_seqs 2 < n 4: two samples fork, the others re-enter as requests whose prompt ends with their first token.
  GenerationRequest r;
  r.prompt = prompts(3, 512).back();
  r.sampling.temperature = 0.9f;
  r.sampling.seed = 7;
  r.max_tokens = 8;
  r.ignore_eos = true;
  r.n = 2;
  EngineConfig c = base_config();
  c.scheduler.max_seqs = 2;
  auto e = Engine::create(synth_model(), c);
  GenerationRequest r4 = r;
  r4.n = 4;
  EXPECT_THROW(e->add_request(r4, nullptr), Error);  // n > max_seqs is refused up front
  const Outputs two = run(*e, {r, r});                // the second request's fork finds max_seqs full
  ASSERT_EQ(two.size(), 2u);
  auto wide = Engine::create(synth_model(), base_config());
  const Outputs forked = run(*wide, {r});
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(two.begin()->second[i].tokens, std::next(two.begin())->second[i].tokens) << "sample " << i;
    EXPECT_EQ(two.begin()->second[i].tokens, forked.begin()->second[i].tokens) << "sample " << i;
    EXPECT_EQ(two.begin()->second[i].tokens.size(), 8u);
  }
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
}

// Per-sample seeds are seed + i in uint64 arithmetic: INT64_MAX + 1 is 2^63 (once a signed overflow
// that surfaced as a refused negative seed), and UINT64_MAX + 1 wraps to 0.
TEST(Engine, ParallelSampleSeedsWrapInUint64) {
  auto e = Engine::create(synth_model(), base_config());
  for (uint64_t base : {uint64_t(INT64_MAX), ~uint64_t{0}}) {
    GenerationRequest r;
    r.prompt = prompts(2, 512).back();
    r.sampling.temperature = 0.9f;
    r.sampling.seed = base;
    r.max_tokens = 6;
    r.ignore_eos = true;
    r.n = 2;
    GenerationRequest second = r;
    second.n = 1;
    second.sampling.seed = base + 1;
    const Outputs o = run(*e, {r, second});
    ASSERT_EQ(o.size(), 2u);
    EXPECT_EQ(o.begin()->second[1].tokens, std::next(o.begin())->second[0].tokens) << "base " << base;
  }
}

TEST(Engine, AbortReturnsEveryBlock) {
  EngineConfig c = base_config();
  c.kv.prefix_caching = false;
  auto e = Engine::create(synth_model(), c);
  std::map<RequestId, FinishReason> reasons;
  std::vector<RequestId> ids;
  for (const auto& p : prompts(4, 512)) {
    GenerationRequest r = greedy(p, 200);
    r.n = 2;
    ids.push_back(e->add_request(r, [&](const TokenEvent& ev) {
      if (ev.finished) reasons[ev.id * 10 + ev.index] = ev.finish_reason;
    }));
  }
  for (int i = 0; i < 6; ++i) e->step();
  EXPECT_GT(e->stats().kv_blocks_used, 0);
  for (RequestId id : ids) e->abort(id);
  e->abort(12345);  // unknown: ignored
  e->step();
  EXPECT_FALSE(e->has_work());
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
  EXPECT_EQ(e->stats().aborts, 4);
  EXPECT_EQ(reasons.size(), 8u);
  for (const auto& [k, why] : reasons) EXPECT_EQ(why, FinishReason::kAbort);
}

TEST(Engine, MaxTokensCapClampsAndIsFlagged) {
  EngineConfig c = base_config();
  c.requests.max_tokens_cap = 8;
  c.requests.default_max_tokens = 5;
  auto e = Engine::create(synth_model(), c);
  const auto ps = prompts(2, 512);
  std::vector<RequestId> ids;
  const Outputs o = run(*e, {greedy(ps[0], 100), greedy(ps[1], 0)}, &ids);
  const Sample& capped = o.at(ids[0])[0];
  EXPECT_TRUE(capped.clamped);
  EXPECT_EQ(capped.tokens.size(), 8u);
  EXPECT_EQ(capped.reason, FinishReason::kLength);
  EXPECT_FALSE(o.at(ids[1])[0].clamped);
  EXPECT_EQ(o.at(ids[1])[0].tokens.size(), 5u);
}

TEST(Engine, StopTokenFinishesWithStop) {
  auto e = Engine::create(synth_model(), base_config());
  const auto p = prompts(1, 512)[0];
  const auto free_run = tokens_of(run(*e, {greedy(p, 12)}))[0];
  GenerationRequest r = greedy(p, 12);
  r.stop_token_ids = {free_run[3]};
  const Outputs o = run(*e, {r});
  const Sample& s = o.begin()->second[0];
  EXPECT_EQ(s.reason, FinishReason::kStop);
  EXPECT_LE(s.tokens.size(), 4u);
  EXPECT_EQ(s.tokens.back(), free_run[3]);
}

TEST(Engine, RejectsOverlongPromptAndUnfittableContext) {
  EngineConfig c = base_config();
  c.scheduler.max_model_len = 64;
  auto e = Engine::create(synth_model(), c);
  EXPECT_EQ(e->max_model_len(), 64);
  EXPECT_THROW(e->add_request(greedy(std::vector<Token>(64, 5), 4), nullptr), Error);
  EXPECT_THROW(e->add_request(greedy({}, 4), nullptr), Error);
  EXPECT_THROW(e->add_request(greedy({1, 600}, 4), nullptr), Error);
  EngineConfig small = base_config();
  small.kv.memory_bytes = 4096;  // less than one block
  small.scheduler.max_model_len = 256;
  try {
    Engine::create(synth_model(), small);
    FAIL() << "expected Error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("max_model_len 256"), std::string::npos) << err.what();
  }
  BatchingMode mode = BatchingMode::kStatic;
  EXPECT_FALSE(parse_batching_mode("dynamic", &mode));
  for (BatchingMode m : {BatchingMode::kContinuous, BatchingMode::kStatic, BatchingMode::kStaticPadded})
    EXPECT_TRUE(parse_batching_mode(batching_mode_name(m), &mode) && mode == m);
}

// The default KV pool is what max_seqs sequences of max_model_len can use, capped by the fraction of
// MemAvailable (it took 50% of free memory even for --max-seqs 4); the start-up line says which bound won.
TEST(Engine, DefaultKvPoolIsSizedByMaxSeqsTimesContext) {
  ModelConfig cfg;
  cfg.n_layers = 2, cfg.n_kv_heads = 4, cfg.head_dim = 16;  // 2 x 2 x 4 x 16 x 4 B = 1 KiB per token (f32)
  const KvBudget small = kv_budget(0, 0.5, cfg, KvPrecision::uniform(cfg.n_layers, KvDtype::f32), 16, 4, 100);
  EXPECT_EQ(small.budget_bytes, size_t(4) * 112 * 1024);  // 100 tokens -> 7 whole blocks of 16
  EXPECT_NE(small.how.find("max_seqs 4 x max_model_len 100"), std::string::npos) << small.how;
  const KvBudget huge = kv_budget(0, 0.5, cfg, KvPrecision::uniform(cfg.n_layers, KvDtype::f32), 16, 1 << 20, 1 << 20);
  EXPECT_EQ(huge.budget_bytes, kv::kv_budget_from_fraction(huge.mem_available, 0.5));
  EXPECT_NE(huge.how.find("--kv-fraction 0.50"), std::string::npos) << huge.how;
  EXPECT_EQ(kv_budget(12345, 0.5, cfg, KvPrecision::uniform(cfg.n_layers, KvDtype::f32), 16, 4, 100).budget_bytes, 12345u);
  // Through the engine: 2 sequences x 256 tokens is the whole pool.
  EngineConfig c = base_config();
  c.kv.memory_bytes = 0;
  c.scheduler.max_seqs = 2;
  c.scheduler.max_model_len = 256;
  auto e = Engine::create(synth_model(), c);
  EXPECT_EQ(e->stats().kv_capacity_tokens, 2 * 256);
}

// The background class through the public API: requests asking for more than long_request_tokens run at
// most max_background_running at a time, a short request added after them finishes first, and each
// sample's tokens are the same as when run alone (the class changes when, never what).
TEST(Engine, BackgroundClassBoundsLongJobsAndKeepsOutputs) {
  EngineConfig c = base_config();
  c.requests.long_request_tokens = 8;
  c.scheduler.max_background_running = 1;
  auto e = Engine::create(synth_model(), c);
  const auto ps = prompts(4, 200);
  std::map<RequestId, int> finished_at;
  std::map<RequestId, std::vector<Token>> got;
  int step = 0;
  std::vector<RequestId> ids;
  for (int i = 0; i < 4; ++i) {
    GenerationRequest r = greedy(ps[i], i < 3 ? 12 : 4);  // three long ones, then a short one
    EXPECT_EQ(e->resolve(r).priority, i < 3 ? Priority::kBackground : Priority::kInteractive);
    ids.push_back(e->add_request(r, [&](const TokenEvent& ev) {
      if (ev.has_token) got[ev.id].push_back(ev.token);
      if (ev.finished) finished_at[ev.id] = step;
    }));
  }
  for (; e->has_work(); ++step) {
    e->step();
    EXPECT_LE(e->stats().background_running, 1) << "step " << step;
  }
  ASSERT_EQ(finished_at.size(), 4u);
  EXPECT_LT(finished_at.at(ids[3]), finished_at.at(ids[0]));
  EXPECT_LT(finished_at.at(ids[0]), finished_at.at(ids[1]));
  EXPECT_LT(finished_at.at(ids[1]), finished_at.at(ids[2]));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(got.at(ids[i]), run_greedy(synth_model(), base_config(), {ps[i]}, i < 3 ? 12 : 4)[0]) << i;
}

}  // namespace
}  // namespace tinfer

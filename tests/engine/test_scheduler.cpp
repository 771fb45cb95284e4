// Scheduler behaviour with a fake runner: admission and retirement every step, the token budget, chunked
// prefill on/off, max_seqs, limits as resolved, the background class, stop ids, EOS, abort, static vs
// continuous, prefix hits.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "tinfer/error.h"
#include "test_scheduler_util.h"

namespace tinfer::test {
namespace {

// A resolved request (tinfer/request_resolver.h does the resolving): max_tokens 0 stands for the default
// these tests use (3), and the stop ids hold the model's EOS (2).
RequestParams params(std::vector<Token> prompt, int max_tokens = 0) {
  RequestParams p;
  p.prompt = std::move(prompt);
  p.max_tokens = max_tokens > 0 ? max_tokens : 3;
  p.stop_ids = {2};
  return p;
}

std::vector<RequestId> ids_of(const BatchPlan& plan) {
  std::vector<RequestId> ids;
  for (const auto& s : plan.requests) ids.push_back(s.id);
  return ids;
}

SchedulerConfig config(int budget = 64, int max_seqs = 8) {
  SchedulerConfig c;
  c.max_batched_tokens = budget;
  c.max_seqs = max_seqs;
  c.max_model_len = 64;
  return c;
}

TEST(Scheduler, AdmitsAndRetiresEveryStep) {
  Scheduler s(config(), kv_config(32));
  FakeRunner runner(32, 4);
  s.add(1, params(prompt_of(5), 1));
  s.add(2, params(prompt_of(6, 200), 3));
  BatchPlan p = s.schedule();
  EXPECT_EQ(ids_of(p), (std::vector<RequestId>{1, 2}));
  EXPECT_EQ(p.num_tokens, 11);
  EXPECT_TRUE(p.requests[0].needs_logits && p.requests[1].needs_logits);
  auto outs = s.update(p, runner.run(p));
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_TRUE(outs[0].finished);  // max_tokens 1: leaves at once
  EXPECT_EQ(outs[0].finish_reason, FinishReason::kLength);
  EXPECT_EQ(s.num_running(), 1);
  EXPECT_EQ(s.kv().stats().used, 2);  // request 1's blocks are back

  s.add(3, params(prompt_of(3, 300)));
  p = s.schedule();  // request 2 decodes, request 3 joins in the same step
  EXPECT_EQ(ids_of(p), (std::vector<RequestId>{2, 3}));
  EXPECT_EQ(p.requests[0].tokens.size(), 1u);
  EXPECT_EQ(p.requests[0].start_pos, 6);
  EXPECT_EQ(p.num_tokens, 4);
  auto done = drive(s, runner);
  EXPECT_EQ(done.at(2).output_tokens.size(), 3u);
  EXPECT_EQ(done.at(3).output_tokens.size(), 3u);  // the server default
  EXPECT_EQ(s.kv().stats().used, 0);
}

TEST(Scheduler, ChunkedPrefillSplitsALongPromptOverSteps) {
  Scheduler s(config(8), kv_config(32));
  FakeRunner runner(32, 4);
  s.add(1, params(prompt_of(20), 2));
  std::vector<int> starts;
  std::vector<bool> logits;
  for (int i = 0; i < 3; ++i) {
    BatchPlan p = s.schedule();
    ASSERT_EQ(p.requests.size(), 1u);
    EXPECT_LE(p.num_tokens, 8);
    starts.push_back(p.requests[0].start_pos);
    logits.push_back(p.requests[0].needs_logits);
    s.update(p, runner.run(p));
  }
  EXPECT_EQ(starts, (std::vector<int>{0, 8, 16}));
  EXPECT_EQ(logits, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(s.find(1)->num_output_tokens(), 1);
}

TEST(Scheduler, WithoutChunkingAPromptWaitsUntilItFitsWhole) {
  SchedulerConfig c = config(16);
  c.max_model_len = 16;
  c.chunked_prefill = false;
  Scheduler s(c, kv_config(32));
  FakeRunner runner(32, 4);
  s.add(1, params(prompt_of(10), 4));
  s.add(2, params(prompt_of(10, 200), 4));
  BatchPlan p = s.schedule();
  EXPECT_EQ(ids_of(p), (std::vector<RequestId>{1}));  // 6 tokens left: request 2 does not fit whole
  s.update(p, runner.run(p));
  p = s.schedule();
  EXPECT_EQ(ids_of(p), (std::vector<RequestId>{1, 2}));
  EXPECT_EQ(p.num_tokens, 11);

  SchedulerConfig bad = config(8);
  bad.chunked_prefill = false;  // budget 8 < max_model_len 64: a long sequence could never run
  EXPECT_THROW(Scheduler(bad, kv_config(32)), Error);
}

TEST(Scheduler, ChunkingFillsTheRemainingBudget) {
  Scheduler s(config(16), kv_config(32));
  FakeRunner runner(32, 4);
  s.add(1, params(prompt_of(10), 4));
  s.add(2, params(prompt_of(10, 200), 4));
  BatchPlan p = s.schedule();
  ASSERT_EQ(ids_of(p), (std::vector<RequestId>{1, 2}));
  EXPECT_EQ(p.requests[1].tokens.size(), 6u);
  EXPECT_FALSE(p.requests[1].needs_logits);
  s.update(p, runner.run(p));
  p = s.schedule();  // decode of 1 first, then the rest of 2's prompt
  EXPECT_EQ(ids_of(p), (std::vector<RequestId>{1, 2}));
  EXPECT_EQ(p.requests[1].start_pos, 6);
  EXPECT_TRUE(p.requests[1].needs_logits);
}

TEST(Scheduler, MaxSeqsBoundsTheRunningSet) {
  Scheduler s(config(64, 2), kv_config(32));
  FakeRunner runner(32, 4);
  for (RequestId id = 1; id <= 5; ++id) s.add(id, params(prompt_of(3, static_cast<Token>(id * 10)), 2));
  auto done = drive(s, runner);  // drive() checks the bound every step
  EXPECT_EQ(done.size(), 5u);
}

// Limits are resolved before the scheduler (request_resolver_test.cpp); it takes max_tokens as given, still
// ends a request at max_model_len, and refuses what it cannot run.
TEST(Scheduler, LimitsAsGivenAndRefusals) {
  Scheduler s(config(), kv_config(32));
  FakeRunner runner(32, 4);
  s.add(1, params(prompt_of(4), 8));
  s.add(2, params(prompt_of(4, 200), 3));
  s.add(3, params(prompt_of(60, 300), 8));  // max_model_len 64 ends it first
  EXPECT_EQ(s.find(1)->max_tokens, 8);
  auto done = drive(s, runner);
  EXPECT_EQ(done.at(1).output_tokens.size(), 8u);
  EXPECT_EQ(done.at(1).finish_reason, FinishReason::kLength);
  EXPECT_EQ(done.at(2).output_tokens.size(), 3u);
  EXPECT_EQ(done.at(3).output_tokens.size(), 4u);
  EXPECT_EQ(done.at(3).finish_reason, FinishReason::kLength);
  EXPECT_THROW(s.add(4, params(prompt_of(64))), Error);  // no room for one output
  EXPECT_THROW(s.add(5, params({})), Error);
  RequestParams unresolved = params(prompt_of(2));
  unresolved.max_tokens = 0;
  EXPECT_THROW(s.add(7, unresolved), Error);
  unresolved = params(prompt_of(2));
  unresolved.priority = Priority::kAuto;
  EXPECT_THROW(s.add(8, unresolved), Error);
  s.add(6, params(prompt_of(2)));
  EXPECT_THROW(s.add(6, params(prompt_of(2))), Error);
}

// The background class: with max_background_running 1, a burst of long jobs holds one seat; an interactive
// request added behind them joins at the next step and finishes first; each background job starts only when
// the previous one has finished and nothing interactive waits. Preempted background jobs resume in their class.
TEST(Scheduler, BackgroundClassHoldsItsSeatsAndNeverBlocksInteractive) {
  SchedulerConfig c = config(64, 4);
  c.max_background_running = 1;
  Scheduler s(c, kv_config(32));
  FakeRunner runner(32, 4);
  for (RequestId id = 1; id <= 3; ++id) {
    RequestParams p = params(prompt_of(4, static_cast<Token>(100 * id)), 20);
    p.priority = Priority::kBackground;
    s.add(id, p);
  }
  BatchPlan p = s.schedule();
  EXPECT_EQ(ids_of(p), (std::vector<RequestId>{1}));
  EXPECT_EQ(s.num_background_running(), 1);
  EXPECT_EQ(s.num_background_waiting(), 2);
  s.update(p, runner.run(p));
  s.add(10, params(prompt_of(4, 900), 5));
  p = s.schedule();
  EXPECT_EQ(ids_of(p), (std::vector<RequestId>{1, 10}));  // joins at once, ahead of the waiting long jobs
  std::map<RequestId, int> finished_at;
  int step = 0;
  for (s.update(p, runner.run(p)); s.has_unfinished(); ++step) {
    p = s.schedule();
    ASSERT_LE(s.num_background_running(), 1) << "step " << step;
    for (const auto& o : s.update(p, runner.run(p)))
      if (o.finished) finished_at[o.id] = step;
  }
  ASSERT_EQ(finished_at.size(), 4u);
  EXPECT_LT(finished_at.at(10), finished_at.at(1));
  EXPECT_LT(finished_at.at(1), finished_at.at(2));
  EXPECT_LT(finished_at.at(2), finished_at.at(3));
  // An interactive request waiting blocks background admission even when seats and budget are left.
  c.chunked_prefill = false;
  Scheduler t(c, kv_config(32));
  RequestParams bg = params(prompt_of(4), 20);
  bg.priority = Priority::kBackground;
  t.add(1, params(prompt_of(40, 300), 5));
  t.add(2, params(prompt_of(40, 400), 5));  // does not fit the rest of the 64-token budget: waits
  t.add(3, bg);                             // would fit, but request 2 is ahead of its class
  p = t.schedule();
  EXPECT_EQ(ids_of(p), (std::vector<RequestId>{1}));
  EXPECT_EQ(t.num_background_waiting(), 1);
}

TEST(Scheduler, StopIdsAndEos) {
  Scheduler s(config(), kv_config(32));
  RequestParams a = params(prompt_of(3), 8);
  a.stop_ids.push_back(77);
  RequestParams b = params(prompt_of(3, 200), 8);
  RequestParams c = params(prompt_of(3, 300), 3);
  c.stop_ids = {};  // resolved with ignore_eos
  s.add(1, a);
  s.add(2, b);
  s.add(3, c);
  BatchPlan p = s.schedule();
  auto outs = s.update(p, std::vector<Token>{77, 2, 2});  // stop id for 1, EOS for 2 and 3
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_TRUE(outs[0].finished);
  EXPECT_EQ(std::string(finish_reason_name(outs[0].finish_reason)), "stop");
  EXPECT_EQ(outs[0].output_tokens, (std::vector<Token>{77}));
  EXPECT_TRUE(outs[1].finished);
  EXPECT_EQ(outs[1].finish_reason, FinishReason::kStop);
  EXPECT_FALSE(outs[2].finished);  // ignores EOS
  EXPECT_EQ(outs[2].new_tokens, (std::vector<Token>{2}));
  p = s.schedule();
  outs = s.update(p, std::vector<Token>{77});  // 77 is not a stop id for request 3
  EXPECT_FALSE(outs[0].finished);
}

TEST(Scheduler, AbortInAnyState) {
  Scheduler s(config(8, 1), kv_config(32));
  FakeRunner runner(32, 4);
  s.add(1, params(prompt_of(12), 4));
  s.add(2, params(prompt_of(4, 200), 4));
  BatchPlan p = s.schedule();  // 1 prefills its first chunk; 2 waits (max_seqs 1)
  EXPECT_EQ(s.kv().stats().used, 2);
  auto a = s.abort(2);  // waiting
  ASSERT_TRUE(a);
  EXPECT_EQ(std::string(finish_reason_name(a->finish_reason)), "abort");
  a = s.abort(1);  // running, with a plan in flight
  ASSERT_TRUE(a);
  EXPECT_EQ(s.kv().stats().used, 0);                // blocks returned at once
  EXPECT_TRUE(s.update(p, runner.run(p)).empty());  // the stale plan is ignored
  EXPECT_FALSE(s.abort(1));
  EXPECT_FALSE(s.has_unfinished());
}

// max_seqs 2; request 1 stops after one token, request 2 after five. Returns the step at which 3 is admitted.
int step_when_third_joins(std::unique_ptr<BatchingPolicy> policy) {
  Scheduler s(config(64, 2), kv_config(32), std::move(policy));
  FakeRunner runner(32, 4);
  s.add(1, params(prompt_of(3), 1));
  s.add(2, params(prompt_of(3, 200), 5));
  s.add(3, params(prompt_of(3, 300), 1));
  for (int step = 0; step < 20; ++step) {
    BatchPlan p = s.schedule();
    const auto ids = ids_of(p);
    if (std::find(ids.begin(), ids.end(), 3) != ids.end()) return step;
    s.update(p, runner.run(p));
  }
  return -1;
}

TEST(Scheduler, StaticBatchDrainsBeforeAdmittingContinuousJoinsAtOnce) {
  EXPECT_EQ(step_when_third_joins(std::make_unique<ContinuousBatching>()), 1);  // the step after 1 finished
  EXPECT_EQ(step_when_third_joins(std::make_unique<StaticBatching>()), 5);      // after 2's fifth token
}

// A static batch forms over as many steps as its prompts need: with a budget of 8 tokens and 8-token
// prompts, one seat fills per step (the members admitted earlier decode meanwhile), and all four fill
// (steps 0-3) before the batch closes. Request 4, admitted last with a 4-token chunk, has its first
// token at step 4 and its 8th at step 11; the fifth request waits for it, then the next batch forms.
TEST(Scheduler, StaticBatchFillsEverySeatAcrossSteps) {
  Scheduler s(config(8, 4), kv_config(64), std::make_unique<StaticBatching>());
  FakeRunner runner(32, 4);
  for (RequestId id = 1; id <= 5; ++id) s.add(id, params(prompt_of(8, int(100 * id)), 8));
  int joined5 = -1, max_running = 0;
  for (int step = 0; step < 60 && s.has_unfinished(); ++step) {
    BatchPlan p = s.schedule();
    max_running = std::max(max_running, s.num_running());
    const auto ids = ids_of(p);
    if (joined5 < 0 && std::find(ids.begin(), ids.end(), 5) != ids.end()) joined5 = step;
    if (step < 4) {
      EXPECT_EQ(s.num_running(), step + 1) << "step " << step;
    }
    s.update(p, runner.run(p));
  }
  EXPECT_EQ(max_running, 4);
  EXPECT_FALSE(s.has_unfinished());
  EXPECT_EQ(joined5, 12);
}

// static-padded: request 1 (1 token) finishes at step 0 but its row is computed as padding until
// request 2 (5 tokens) finishes at step 4; the batch then ends, every block returns, and request 3
// joins. Outputs equal those of the unpadded static policy; only the computed tokens differ.
TEST(Scheduler, PaddedStaticBatchComputesFinishedRowsUntilTheBatchEnds) {
  std::map<RequestId, RequestOutput> outs_by_policy[2];
  for (int padded = 0; padded < 2; ++padded) {
    std::unique_ptr<BatchingPolicy> policy = std::make_unique<StaticBatching>();
    if (padded) policy = std::make_unique<PaddedStaticBatching>();
    Scheduler s(config(64, 2), kv_config(32), std::move(policy));
    FakeRunner runner(32, 4);
    s.add(1, params(prompt_of(3), 1));
    s.add(2, params(prompt_of(3, 200), 5));
    s.add(3, params(prompt_of(3, 300), 1));
    int joined3 = -1;
    for (int step = 0; step < 20 && s.has_unfinished(); ++step) {
      BatchPlan p = s.schedule();
      const auto ids = ids_of(p);
      if (joined3 < 0 && std::find(ids.begin(), ids.end(), 3) != ids.end()) joined3 = step;
      const int pads = int(std::count_if(p.requests.begin(), p.requests.end(), [](auto& r) { return r.padding; }));
      if (step >= 1 && step <= 4) {
        EXPECT_EQ(pads, padded ? 1 : 0) << "step " << step;
        EXPECT_EQ(s.num_running(), padded ? 2 : 1) << "step " << step;
      }
      for (auto& o : s.update(p, runner.run(p)))
        if (o.finished) outs_by_policy[padded][o.id] = o;
    }
    EXPECT_EQ(joined3, 5);
    EXPECT_FALSE(s.has_unfinished());
    EXPECT_EQ(s.num_padding(), 0);
    EXPECT_EQ(s.num_running(), 0);
    EXPECT_EQ(s.kv().stats().used, 0);
    EXPECT_EQ(s.stats().padding_tokens, padded ? 4 : 0);  // steps 1-4: one padding token each
  }
  for (RequestId id : {1, 2, 3})
    EXPECT_EQ(outs_by_policy[0].at(id).output_tokens, outs_by_policy[1].at(id).output_tokens) << id;
}

// A padding row keeps the id of the member it came from (no reserved id range): that id stays in use, for
// add() and fork(), until the row leaves with its batch.
TEST(Scheduler, PaddingRowKeepsItsMembersIdInUse) {
  Scheduler s(config(64, 2), kv_config(16), std::make_unique<PaddedStaticBatching>());
  FakeRunner runner(16, 4);
  s.add(1, params(prompt_of(3), 1));
  s.add(2, params(prompt_of(3, 200), 4));
  BatchPlan p = s.schedule();
  s.update(p, runner.run(p));  // request 1 finished; its row pads the batch
  EXPECT_EQ(s.num_padding(), 1);
  EXPECT_FALSE(s.find(1));
  EXPECT_THROW(s.add(1, params(prompt_of(3))), Error);
  EXPECT_THROW(s.fork(2, 1), Error);
  drive(s, runner);
  EXPECT_EQ(s.num_padding(), 0);
  EXPECT_NO_THROW(s.add(1, params(prompt_of(3))));
}

// A padding row never takes blocks from a real request. 5 blocks of 4 tokens; request 1's row is one
// position ahead of request 2, so it takes the last free block at step 4 and at step 5 request 2 (its
// 9th position) finds the pool empty. The newest unscheduled running sequence is request 2 itself,
// which plain preemption would evict; the padding row is dropped instead (not a preemption).
TEST(Scheduler, PaddingRowsGiveWayWhenBlocksRunOut) {
  Scheduler s(config(64, 2), kv_config(5), std::make_unique<PaddedStaticBatching>());
  FakeRunner runner(32, 4);
  s.add(1, params(prompt_of(5), 1));  // finishes at once; its row then grows by a token per step
  s.add(2, params(prompt_of(4, 200), 8));
  auto done = drive(s, runner);
  EXPECT_EQ(done.at(2).output_tokens.size(), 8u);
  EXPECT_EQ(s.stats().preemptions, 0);
  EXPECT_EQ(s.stats().padding_tokens, 4);  // steps 1-4; without the drop it would run to step 7
  EXPECT_EQ(s.num_padding(), 0);
  EXPECT_EQ(s.kv().stats().used, 0);
}

TEST(Scheduler, PrefixHitsSkipComputationAndKeepOutputs) {
  auto prompt = prompt_of(18);
  std::vector<Token> reference;
  {
    Scheduler cold(config(), kv_config(32, false));
    FakeRunner runner(32, 4);
    cold.add(1, params(prompt, 4));
    reference = drive(cold, runner).at(1).output_tokens;
  }
  Scheduler s(config(), kv_config(32));
  FakeRunner runner(32, 4);
  s.add(1, params(prompt, 4));
  drive(s, runner);
  s.add(2, params(prompt, 4));
  BatchPlan p = s.schedule();
  ASSERT_EQ(p.requests.size(), 1u);
  EXPECT_EQ(p.requests[0].start_pos, 16);  // 4 full blocks hit; 2 prompt tokens computed
  EXPECT_EQ(s.find(2)->num_cached_prompt_tokens, 16);
  auto outs = s.update(p, runner.run(p));
  auto done = drive(s, runner);
  EXPECT_EQ(done.at(2).output_tokens, reference);
  EXPECT_EQ(done.at(2).num_cached_prompt_tokens, 16);

  s.add(3, params(prompt_of(16), 1));  // whole prompt cached: the last block is still computed
  p = s.schedule();
  EXPECT_EQ(p.requests[0].start_pos, 12);
  EXPECT_TRUE(p.requests[0].needs_logits);
  RequestParams salted = params(prompt, 1);
  salted.cache_salt = 9;
  s.update(p, runner.run(p));
  s.add(4, salted);
  p = s.schedule();
  EXPECT_EQ(p.requests[0].start_pos, 0);  // another salt never shares
  EXPECT_GT(s.kv().stats().prefix_hit_tokens, 0);
}

}  // namespace
}  // namespace tinfer::test

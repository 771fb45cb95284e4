// The scheduler's speculative seams with a fake runner (block size 4): proposed drafts ride on a decode step
// within the budget, the output/length limits and the free blocks (never preempting); update() keeps a checked
// prefix of them plus one token, rolls the rejected slots back (blocks return to the pool), and the prefix
// cache never holds a block with an unverified token; a stop id inside the kept drafts ends the request there.
#include <gtest/gtest.h>

#include "tinfer/error.h"
#include "test_scheduler_util.h"

namespace tinfer::test {
namespace {

SchedulerConfig config(int budget = 64) {
  SchedulerConfig c;
  c.max_batched_tokens = budget;
  c.max_seqs = 8;
  c.max_model_len = 64;
  return c;
}

RequestParams params(std::vector<Token> prompt, int max_tokens) { return params_eos2(std::move(prompt), max_tokens); }

// Prefill a 3-token prompt, then decode step with `draft`; returns the verify plan.
BatchPlan prefill_then_draft(Scheduler& s, FakeRunner& runner, std::vector<Token> draft) {
  s.add(1, params({100, 101, 102}, 20));
  BatchPlan p = s.schedule();
  s.update(p, std::vector<Token>{50});  // tokens 100 101 102 50; 50 not computed
  EXPECT_EQ(s.decoding(), std::vector<RequestId>{1});
  s.propose(1, std::move(draft));
  p = s.schedule();
  (void)runner.run(p);
  return p;
}

TEST(SchedulerSpec, DraftsRideTheDecodeStepAndRejectedSlotsRollBack) {
  Scheduler s(config(), kv_config(16));
  FakeRunner runner(16, 4);
  const BatchPlan p = prefill_then_draft(s, runner, {60, 61, 62, 63, 64});
  ASSERT_EQ(p.requests.size(), 1u);
  const ScheduledRequest& r = p.requests[0];
  EXPECT_EQ(r.start_pos, 3);
  EXPECT_EQ(r.tokens, (std::vector<Token>{50, 60, 61, 62, 63, 64}));
  EXPECT_EQ(r.num_draft, 5);
  EXPECT_EQ(r.num_logits(), 6);
  EXPECT_EQ(p.num_tokens, 6);
  EXPECT_EQ(r.block_table, (std::vector<kv::BlockId>{0, 1, 2}));  // positions 0..8
  EXPECT_EQ(s.kv().stats().used, 3);
  // Keep 60 and 61, then 70 instead of 62: positions 0..5 have KV (100 101 102 50 60 61), 70 is next.
  auto outs = s.update(p, std::vector<std::vector<Token>>{{60, 61, 70}});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].new_tokens, (std::vector<Token>{60, 61, 70}));
  EXPECT_EQ(s.find(1)->num_computed_tokens, 6);
  EXPECT_EQ(s.find(1)->tokens, (std::vector<Token>{100, 101, 102, 50, 60, 61, 70}));
  EXPECT_EQ(s.kv().block_table(1), (std::vector<kv::BlockId>{0, 1}));  // block 2 (drafts only) went back
  EXPECT_EQ(s.kv().stats().used, 2);
  EXPECT_EQ(s.stats().spec_drafted, 5);
  EXPECT_EQ(s.stats().spec_accepted, 2);
  EXPECT_EQ(s.stats().spec_steps, 1);
  // A kept draft that is not a draft, or too many tokens, is refused.
  s.propose(1, {80, 81});
  const BatchPlan q = s.schedule();
  EXPECT_THROW(s.update(q, std::vector<std::vector<Token>>{{81, 82}}), Error);
}

TEST(SchedulerSpec, RejectedTokensNeverEnterThePrefixCache) {
  Scheduler s(config(), kv_config(16));
  FakeRunner runner(16, 4);
  // Drafts fill block 1 (positions 4..7) and part of block 2; all are rejected.
  const BatchPlan p = prefill_then_draft(s, runner, {60, 61, 62, 63, 64});
  s.update(p, std::vector<std::vector<Token>>{{77}});  // tokens 100 101 102 50 77, computed 4
  EXPECT_EQ(s.kv().stats().used, 1);
  s.abort(1);
  // A prompt equal to the drafted sequence finds only block 0 (the verified 100 101 102 50).
  s.add(2, params({100, 101, 102, 50, 60, 61, 62, 63, 64, 65}, 1));
  const BatchPlan q = s.schedule();
  EXPECT_EQ(q.requests[0].start_pos, 4);
  (void)runner.run(q);
  s.update(q, runner.run(q));
}

TEST(SchedulerSpec, DraftsAreCappedByBudgetLimitsAndFreeBlocks) {
  {  // budget: 1 decode token + 2 drafts
    Scheduler s(config(3), kv_config(16));
    FakeRunner runner(16, 4);
    s.add(1, params({100, 101}, 20));
    BatchPlan p = s.schedule();
    s.update(p, std::vector<Token>{50});
    s.propose(1, {60, 61, 62, 63});
    p = s.schedule();
    EXPECT_EQ(p.requests[0].num_draft, 2);
    EXPECT_EQ(p.num_tokens, 3);
  }
  {  // max_tokens 3 with one output already: at most 1 draft (+ the token after it)
    Scheduler s(config(), kv_config(16));
    FakeRunner runner(16, 4);
    s.add(1, params({100, 101}, 3));
    BatchPlan p = s.schedule();
    s.update(p, std::vector<Token>{50});
    s.propose(1, {60, 61, 62, 63});
    p = s.schedule();
    EXPECT_EQ(p.requests[0].num_draft, 1);
    auto outs = s.update(p, std::vector<std::vector<Token>>{{60, 70}});
    ASSERT_EQ(outs.size(), 1u);
    EXPECT_TRUE(outs[0].finished);
    EXPECT_EQ(outs[0].finish_reason, FinishReason::kLength);
    EXPECT_EQ(outs[0].output_tokens, (std::vector<Token>{50, 60, 70}));
    EXPECT_EQ(s.kv().stats().used, 0);
  }
  {  // three blocks, two requests holding one each: the drafts shrink to the one free block, nobody is preempted
    Scheduler s(config(), kv_config(3));
    FakeRunner runner(3, 4);
    s.add(1, params({100, 101, 102}, 20));
    s.add(2, params({200, 201, 202}, 20));
    BatchPlan p = s.schedule();
    s.update(p, runner.run(p));
    s.propose(1, {60, 61, 62, 63, 64, 65});
    p = s.schedule();
    ASSERT_EQ(p.requests.size(), 2u);
    EXPECT_EQ(p.requests[0].num_draft, 4);  // positions 3..7: blocks 0 and 2
    EXPECT_EQ(p.requests[0].block_table, (std::vector<kv::BlockId>{0, 2}));
    EXPECT_EQ(p.requests[1].num_draft, 0);
    EXPECT_TRUE(p.preempted.empty());
  }
}

TEST(SchedulerSpec, StopInsideKeptDraftsEndsThere) {
  Scheduler s(config(), kv_config(16));
  FakeRunner runner(16, 4);
  const BatchPlan p = prefill_then_draft(s, runner, {60, 2, 61, 62});
  auto outs = s.update(p, std::vector<std::vector<Token>>{{60, 2, 61, 62, 63}});  // 2 = EOS, kept as a draft
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_TRUE(outs[0].finished);
  EXPECT_EQ(outs[0].finish_reason, FinishReason::kStop);
  EXPECT_EQ(outs[0].new_tokens, (std::vector<Token>{60, 2}));
  EXPECT_EQ(outs[0].output_tokens, (std::vector<Token>{50, 60, 2}));
  EXPECT_EQ(s.kv().stats().used, 0);
  EXPECT_FALSE(s.has_unfinished());
}

TEST(SchedulerSpec, ProposalsAreForOneStepOnly) {
  Scheduler s(config(), kv_config(16));
  FakeRunner runner(16, 4);
  s.add(1, params({100, 101}, 20));
  EXPECT_THROW(s.propose(1, {5}), Error);  // not running yet
  BatchPlan p = s.schedule();
  s.update(p, std::vector<Token>{50});
  s.propose(1, {60});
  p = s.schedule();
  EXPECT_EQ(p.requests[0].num_draft, 1);
  s.update(p, std::vector<std::vector<Token>>{{70}});
  p = s.schedule();  // no new proposal: a plain decode
  EXPECT_EQ(p.requests[0].num_draft, 0);
  EXPECT_EQ(p.requests[0].tokens, std::vector<Token>{70});
}

}  // namespace
}  // namespace tinfer::test

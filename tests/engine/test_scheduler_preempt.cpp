// Scheduler under memory pressure: preemption of the newest request and recompute give the same tokens as an
// uninterrupted run; fork shares blocks with copy-on-write; a seeded random mix of add/step/abort/fork/preempt
// always returns every block and reproduces each request's reference output.
#include <gtest/gtest.h>

#include <random>

#include "test_scheduler_util.h"

namespace tinfer::test {
namespace {

SchedulerConfig config(int budget, int max_seqs, int max_model_len) {
  SchedulerConfig c;
  c.max_batched_tokens = budget;
  c.max_seqs = max_seqs;
  c.max_model_len = max_model_len;
  return c;
}

// The output of one request run alone with plenty of blocks.
std::vector<Token> reference(const RequestParams& p, int max_model_len) {
  Scheduler s(config(64, 1, max_model_len), kv_config(64, false));
  FakeRunner runner(64, 4);
  s.add(1, p);
  return drive(s, runner).at(1).output_tokens;
}

RequestParams params(std::vector<Token> prompt, int max_tokens) { return params_eos2(std::move(prompt), max_tokens); }

TEST(SchedulerPreempt, NewestIsPreemptedAndResumesWithTheSameTokens) {
  for (bool caching : {false, true}) {
    Scheduler s(config(32, 4, 32), kv_config(8, caching));  // 8 blocks of 4: two long requests cannot coexist
    FakeRunner runner(8, 4);
    std::vector<RequestParams> ps;
    for (int i = 0; i < 3; ++i) ps.push_back(params(prompt_of(6, static_cast<Token>(100 * (i + 1))), 12));
    for (int i = 0; i < 3; ++i) s.add(i + 1, ps[i]);
    RequestId first_victim = 0;
    std::map<RequestId, RequestOutput> done;
    while (s.has_unfinished()) {
      const BatchPlan plan = s.schedule();
      if (!plan.preempted.empty() && !first_victim) first_victim = plan.preempted[0];
      for (const auto& o : s.update(plan, runner.run(plan)))
        if (o.finished) done[o.id] = o;
    }
    EXPECT_EQ(first_victim, 3u) << "the newest running request gives its blocks back first";
    EXPECT_GT(s.stats().preemptions, 0);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(done.at(i + 1).output_tokens, reference(ps[i], 32)) << "request " << i + 1;
    EXPECT_EQ(s.kv().stats().used, 0);
  }
}

TEST(SchedulerPreempt, ForkSharesBlocksAndCopiesOnWrite) {
  Scheduler s(config(32, 4, 32), kv_config(16));
  FakeRunner runner(16, 4);
  const RequestParams p = params(prompt_of(6), 6);
  s.add(1, p);
  BatchPlan plan = s.schedule();
  s.update(plan, runner.run(plan));  // prompt computed, first token sampled (not yet computed)
  const std::vector<Token> at_fork = s.find(1)->tokens;
  EXPECT_FALSE(s.fork(1, 2, Token{33}));
  EXPECT_EQ(s.kv().block_table(2), s.kv().block_table(1));
  plan = s.schedule();
  ASSERT_EQ(plan.requests.size(), 2u);
  EXPECT_EQ(plan.requests[0].copies.size(), 1u);  // parent writes slot 6 of the shared block first: copies
  EXPECT_TRUE(plan.requests[1].copies.empty());   // then the child owns the original alone
  for (const auto& o : s.update(plan, runner.run(plan))) EXPECT_FALSE(o.finished);
  auto done = drive(s, runner);
  EXPECT_EQ(done.at(1).output_tokens, reference(p, 32));  // the child's writes never reach the parent
  std::vector<Token> child_prompt = at_fork;
  child_prompt.back() = 33;
  std::vector<Token> child_ref = reference(params(child_prompt, 5), 32);
  child_ref.insert(child_ref.begin(), 33);
  EXPECT_EQ(done.at(2).output_tokens, child_ref);
  EXPECT_EQ(s.kv().stats().used, 0);
}

struct Expect {
  RequestParams params;       // what to run alone for the reference
  std::vector<Token> prefix;  // outputs already fixed before the reference run (forks)
};

TEST(SchedulerPreempt, RandomMixReturnsEveryBlockAndReproducesOutputs) {
  constexpr int kMaxLen = 40;
  for (uint32_t seed : {11u, 12u}) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Scheduler s(config(16, 4, kMaxLen), kv_config(12, seed % 2 == 0));
    FakeRunner runner(12, 4);
    std::map<RequestId, Expect> expect;
    std::map<RequestId, RequestOutput> done;
    std::vector<RequestId> live;
    RequestId next = 1;
    int aborted = 0, forks = 0;
    for (int op = 0; op < 3000; ++op) {
      const int kind = pick(0, 19);
      if (kind < 5) {
        std::vector<Token> prompt = prompt_of(pick(1, 12), static_cast<Token>(100 * pick(1, 3)));
        for (int n = pick(0, 4); n > 0; --n) prompt.push_back(static_cast<Token>(pick(10, 13)));
        RequestParams p = params(prompt, pick(1, 12));
        if (pick(0, 3) == 0) p.stop_ids.push_back(static_cast<Token>(pick(10, 49)));
        expect[next] = {p, {}};
        s.add(next, p);
        live.push_back(next++);
      } else if (kind == 5 && !live.empty()) {
        const RequestId id = live[pick(0, static_cast<int>(live.size()) - 1)];
        ASSERT_TRUE(s.abort(id));
        expect.erase(id);
        std::erase(live, id);
        ++aborted;
      } else if (kind == 6 && !live.empty() && s.num_running() < s.config().max_seqs) {
        const RequestId parent = live[pick(0, static_cast<int>(live.size()) - 1)];
        const Request* r = s.find(parent);
        if (r->status != RequestStatus::kRunning || r->num_output_tokens() == 0) continue;
        const Token t = static_cast<Token>(pick(10, 49));
        std::vector<Token> outs = r->output_tokens();
        outs.back() = t;
        std::vector<Token> ctx = r->tokens;
        ctx.back() = t;
        RequestParams p = params(ctx, r->max_tokens - r->num_output_tokens());
        p.stop_ids = r->stop_ids;
        const RequestId child = next++;
        if (auto fin = s.fork(parent, child, t)) {
          done[child] = *fin;
          expect[child] = {params(ctx, 1), outs};
          expect[child].params.max_tokens = 0;  // finished at the fork: nothing more to run
        } else {
          expect[child] = {p, outs};
          live.push_back(child);
        }
        ++forks;
      } else {
        const BatchPlan plan = s.schedule();
        ASSERT_LE(plan.num_tokens, 16);
        ASSERT_LE(static_cast<int>(plan.requests.size()), 4);
        for (const auto& o : s.update(plan, runner.run(plan)))
          if (o.finished) {
            done[o.id] = o;
            std::erase(live, o.id);
          }
      }
    }
    for (const auto& [id, o] : drive(s, runner)) done[id] = o;
    EXPECT_EQ(s.kv().stats().used, 0) << "blocks leaked";
    EXPECT_EQ(static_cast<int>(s.kv().pool().free_list().size()), 12);
    EXPECT_GT(s.stats().preemptions, 0) << "the mix should preempt";
    EXPECT_GT(aborted, 0);
    EXPECT_GT(forks, 0);
    for (const auto& [id, e] : expect) {
      std::vector<Token> want = e.prefix;
      if (e.params.max_tokens > 0) {
        auto more = reference(e.params, kMaxLen);
        want.insert(want.end(), more.begin(), more.end());
      }
      ASSERT_TRUE(done.count(id)) << "request " << id << " never finished";
      EXPECT_EQ(done.at(id).output_tokens, want) << "seed " << seed << " request " << id;
    }
  }
}

}  // namespace
}  // namespace tinfer::test

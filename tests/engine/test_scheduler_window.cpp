// The scheduler over sliding-window pools sized as the planner sizes them (found by review, both hung before the
// manager counted the blocks a window gives back and took only a hit's window blocks): a lone request whose prompt
// is longer than window + step runs without preempting itself; a next chat turn whose prefix hit is longer than the
// window pool is admitted; a pool too small for one window and one step is refused at construction.
#include <gtest/gtest.h>

#include "tinfer/error.h"
#include "engine/scheduler.h"

namespace tinfer::test {
namespace {

TEST(SchedulerWindow, LoneLongPromptRunsWithoutPreemption) {
  SchedulerConfig sc;
  sc.max_batched_tokens = 16, sc.max_seqs = 1, sc.max_model_len = 128;
  kv::KvCacheConfig kc;
  kc.num_blocks = 8, kc.block_size = 4, kc.window_tokens = 8, kc.prefix_caching = false;  // the planner's pool
  Scheduler s(sc, kv::KvCacheGroups(kc));
  RequestParams p;
  for (int i = 0; i < 64; ++i) p.prompt.push_back(100 + i);
  p.max_tokens = 4, p.stop_ids = {2};
  s.add(1, p);
  int steps = 0;
  for (; steps < 200 && s.has_unfinished(); ++steps) {
    const BatchPlan plan = s.schedule();
    std::vector<Token> out;
    for (const auto& r : plan.requests) out.push_back(r.needs_logits ? 50 : -1);
    s.update(plan, out);
  }
  EXPECT_FALSE(s.has_unfinished()) << "still running after " << steps << " steps";
  EXPECT_EQ(s.stats().preemptions, 0);
}

TEST(SchedulerWindow, PoolSmallerThanAWindowAndAStepIsRefused) {
  SchedulerConfig sc;
  sc.max_batched_tokens = 16, sc.max_seqs = 1, sc.max_model_len = 128;
  kv::KvCacheConfig kc;
  kc.num_blocks = 6, kc.block_size = 4, kc.window_tokens = 8, kc.prefix_caching = false;  // needs (7 + 16) / 4 + 1 = 7
  EXPECT_THROW(Scheduler(sc, kv::KvCacheGroups(kc)), Error);
  kc.num_blocks = 7;
  EXPECT_NO_THROW(Scheduler(sc, kv::KvCacheGroups(kc)));
}

// Mixed local/global groups: a follow-up request whose prompt extends a finished one's (a chat's next turn) gets a
// prefix hit whose every revived window-pool block is counted, though all but the window's go straight back:
// admission is refused forever with nothing running to free anything.
TEST(SchedulerWindow, PrefixHitLongerThanTheWindowPoolIsAdmitted) {
  SchedulerConfig sc;
  sc.max_batched_tokens = 16, sc.max_seqs = 1, sc.max_model_len = 64;
  kv::KvCacheConfig kc;
  kc.block_size = 4, kc.prefix_caching = true;
  const kv::KvGroupSpec groups[] = {{64, 0}, {7, 4}};  // window pool: 1 x (1 + 2) + 16 / 4, as the planner sizes it
  Scheduler s(sc, kv::KvCacheGroups(kc, groups));
  auto run = [&](RequestId id, const std::vector<Token>& prompt) {
    RequestParams p;
    p.prompt = prompt, p.max_tokens = 2, p.stop_ids = {2};
    s.add(id, p);
    int steps = 0;
    for (; steps < 100 && s.has_unfinished(); ++steps) {
      const BatchPlan plan = s.schedule();
      std::vector<Token> out;
      for (const auto& r : plan.requests) out.push_back(r.needs_logits ? 50 : -1);
      s.update(plan, out);
    }
    return steps;
  };
  std::vector<Token> a;
  for (int i = 0; i < 24; ++i) a.push_back(100 + i);
  run(1, a);
  ASSERT_FALSE(s.has_unfinished());
  std::vector<Token> b = a;
  for (int i = 0; i < 8; ++i) b.push_back(300 + i);
  const int steps = run(2, b);
  EXPECT_FALSE(s.has_unfinished()) << "request 2 never admitted in " << steps << " steps";
}

}  // namespace
}  // namespace tinfer::test

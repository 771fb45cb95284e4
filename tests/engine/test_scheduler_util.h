// Scheduler test helpers: a fake model runner that keeps a simulated KV store (block, slot) -> token, applies
// copy-on-write copies, and "samples" a token that depends on the whole context read back through the block
// table, so any wrong block (bad prefix hit, missed copy, lost KV) changes the output.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "engine/scheduler.h"

namespace tinfer::test {

class FakeRunner {
 public:
  explicit FakeRunner(int num_blocks, int block_size)
      : block_size_(block_size), store_(num_blocks, std::vector<Token>(block_size, -1)) {}

  // Executes one plan; returns one token per scheduled request (-1 where no logits are needed).
  std::vector<Token> run(const BatchPlan& plan) {
    for (const auto& s : plan.requests)
      for (const auto& c : s.copies) store_[c.dst] = store_[c.src];
    for (const auto& s : plan.requests)
      for (size_t i = 0; i < s.tokens.size(); ++i) {
        const int p = s.start_pos + static_cast<int>(i);
        store_[s.block_table[p / block_size_]][p % block_size_] = s.tokens[i];
      }
    std::vector<Token> out;
    for (const auto& s : plan.requests) out.push_back(s.needs_logits ? next_token(s) : -1);
    return out;
  }

 private:
  Token next_token(const ScheduledRequest& s) const {
    uint64_t h = 1469598103934665603ull;
    for (int p = 0; p < s.context_len(); ++p) {
      const Token t = store_[s.block_table[p / block_size_]][p % block_size_];
      h = (h ^ static_cast<uint64_t>(t + 7 * p)) * 1099511628211ull;
    }
    return static_cast<Token>(10 + (h >> 33) % 40);  // 10..49: never the tests' EOS ids (< 10)
  }

  int block_size_;
  std::vector<std::vector<Token>> store_;
};

// Checks every plan obeys the config; returns finished outputs by id.
inline std::map<RequestId, RequestOutput> drive(Scheduler& sched, FakeRunner& runner, int max_steps = 10000) {
  std::map<RequestId, RequestOutput> done;
  for (int step = 0; step < max_steps && sched.has_unfinished(); ++step) {
    const BatchPlan plan = sched.schedule();
    EXPECT_LE(plan.num_tokens, sched.config().max_batched_tokens);
    EXPECT_LE(static_cast<int>(plan.requests.size()), sched.config().max_seqs);
    EXPECT_LE(sched.num_running(), sched.config().max_seqs);
    for (const auto& out : sched.update(plan, runner.run(plan)))
      if (out.finished) done[out.id] = out;
  }
  EXPECT_FALSE(sched.has_unfinished()) << "did not drain in " << max_steps << " steps";
  return done;
}

// A resolved request: EOS id 2 (never produced by the fake runner), no other stop ids.
inline RequestParams params_eos2(std::vector<Token> prompt, int max_tokens) {
  RequestParams p;
  p.prompt = std::move(prompt);
  p.max_tokens = max_tokens;
  p.stop_ids = {2};
  return p;
}

inline kv::KvCacheConfig kv_config(int num_blocks, bool caching = true, int block_size = 4) {
  kv::KvCacheConfig c;
  c.num_blocks = num_blocks;
  c.block_size = block_size;
  c.prefix_caching = caching;
  return c;
}

inline std::vector<Token> prompt_of(int n, Token start = 100) {
  std::vector<Token> t(n);
  for (int i = 0; i < n; ++i) t[i] = start + i;
  return t;
}

}  // namespace tinfer::test

// Early exit through the engine (threshold 0 after 2 of stories260K's 5 layers: every decode row exits): only
// decode rows may exit -- a prompt whose last token is left alone in a step by the token budget, or a one-token
// prompt, runs every layer -- so the output equals a batch-1 Session with the same early exit (prompt fed whole,
// then one token per step); and blocks holding output tokens (state-copied deeper K/V) never enter the prefix
// cache, so a second request that extends the first exchange reuses its prompt blocks only.
#include <tinfer/engine.h>

#include <gtest/gtest.h>

#include "common/test_env.h"
#include "engine/session.h"
#include "engine_test_util.h"
#include "backend/backend.h"

namespace tinfer {
namespace {

using namespace engine_test;

EngineConfig exit_config(int budget) {
  EngineConfig c = base_config();
  c.plans.early_exit = EarlyExit{{2}, 0.0f};
  c.scheduler.max_batched_tokens = budget;
  c.kv.block_size = 16;
  return c;
}

// Greedy with early exit on one Session: the prompt in one forward (no exit), then one token per step.
std::vector<Token> exit_session_greedy(const Model& m, const std::vector<Token>& prompt, int n) {
  return session_greedy(m, prompt, n, BackendOptions{.threads = 2, .early_exit = EarlyExit{{2}, 0.0f}});
}

TEST(EngineEarlyExit, OnlyDecodeRowsExitWhateverTheChunking) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  const std::vector<Token> prompt{1, 403, 407, 261, 378, 29892, 727};  // 7 tokens (ids < 512 below)
  std::vector<Token> p = prompt;
  for (Token& t : p) t = t % 512;
  const std::vector<Token> want = exit_session_greedy(*m, p, 12);
  // Budget 6: the prompt's 7th token is computed alone in the second step; it must not exit.
  for (int budget : {64, 6}) {
    auto e = Engine::create(stories(), exit_config(budget));
    const Outputs out = run(*e, {greedy(p, 12)});
    EXPECT_EQ(out.begin()->second[0].tokens, want) << "budget " << budget;
    const EngineStats st = e->stats();
    EXPECT_EQ(st.early_exit_eligible, 11) << "budget " << budget;  // the 11 fed output tokens; no prompt row
    EXPECT_EQ(st.early_exit_exited, 11);
  }
  // A one-token prompt (BOS alone) runs every layer too.
  auto e = Engine::create(stories(), exit_config(64));
  run(*e, {greedy({1}, 5)});
  EXPECT_EQ(e->stats().early_exit_eligible, 4);
}

TEST(EngineEarlyExit, OutputBlocksStayOutOfThePrefixCache) {
  auto m = stories();
  TINFER_REQUIRE_FILE(m ? std::string("x") : std::string(), "models/stories260K.gguf");
  std::vector<Token> p{1};
  for (int i = 0; i < 31; ++i) p.push_back(Token(3 + (i * 37) % 500));  // 32 tokens: two full blocks
  auto e = Engine::create(stories(), exit_config(64));
  const Outputs first = run(*e, {greedy(p, 40)});
  // The next turn: prompt + the whole answer + more. Only the prompt's two blocks may be hits.
  std::vector<Token> next = p;
  const auto& ans = first.begin()->second[0].tokens;
  next.insert(next.end(), ans.begin(), ans.end());
  next.push_back(5);
  const Outputs second = run(*e, {greedy(next, 4)});
  EXPECT_EQ(second.begin()->second[0].cached, 32);
  // Without early exit the answer's full blocks are hits as well (its own answer: greedy text differs).
  EngineConfig plain = exit_config(64);
  plain.plans.early_exit = {};
  auto f = Engine::create(stories(), plain);
  const std::vector<Token> plain_ans = run(*f, {greedy(p, 40)}).begin()->second[0].tokens;
  std::vector<Token> plain_next = p;
  plain_next.insert(plain_next.end(), plain_ans.begin(), plain_ans.end());
  plain_next.push_back(5);
  EXPECT_EQ(run(*f, {greedy(plain_next, 4)}).begin()->second[0].cached, 64);
}

}  // namespace
}  // namespace tinfer

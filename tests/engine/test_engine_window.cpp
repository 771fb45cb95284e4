// Sliding-window KV through the engine: a Gemma-3-shaped synthetic model (5 local layers of window 20, 1 global)
// and a Mistral-shaped one (every layer windowed). Greedy output with the windows' blocks given back equals a
// batch-1 Session (every block kept) and the engine with --kv-window off, over prompts and outputs longer than the
// window, several requests at once, small prefill chunks and shared prefixes; the window pool stays within
// its plan; an all-windowed model runs sequences longer than its whole pool without preemption.
#include <tinfer/engine.h>

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/session.h"
#include "engine_test_util.h"
#include "backend/backend.h"

namespace tinfer {
namespace {

using namespace engine_test;

SynthSpec windowed_spec(const char* arch) {
  SynthSpec s;
  s.arch = arch, s.rope_layout = RopeLayout::neox;
  s.dim = 64, s.n_layers = 6, s.n_heads = 4, s.n_kv_heads = 1, s.head_dim = 32, s.ffn_dim = 128, s.n_vocab = 300;
  s.ctx_len = 256, s.sliding_window = 20, s.tied_embeddings = true, s.weight_std = 0.3f, s.seed = 11;
  return s;
}

std::unique_ptr<Model> windowed_model(const char* arch) {
  return Model::from_gguf_bytes(synthesize_model_bytes(windowed_spec(arch)));
}

std::vector<std::vector<Token>> long_prompts() {
  std::vector<std::vector<Token>> p;
  for (int i = 0; i < 4; ++i) {
    std::vector<Token> t{1};
    for (int j = 0; j < 30 + 17 * i; ++j) t.push_back(Token(3 + (i * 131 + j * 17) % 290));
    p.push_back(t);
  }
  p.push_back(p[3]);  // a shared prefix: the last prompt again, longer
  for (int j = 0; j < 9; ++j) p.back().push_back(Token(50 + j));
  return p;
}

// Every prompt as one greedy request of 40 tokens through e; each answer must equal want's; the engine's stats.
EngineStats run_all(Engine& e, const std::vector<std::vector<Token>>& prompts, const std::vector<std::vector<Token>>& want) {
  std::vector<GenerationRequest> reqs;
  for (const auto& p : prompts) reqs.push_back(greedy(p, 40));
  std::vector<RequestId> ids;
  const Outputs out = run(e, reqs, &ids);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(out.at(ids[i])[0].tokens, want[i]) << "request " << i;
  return e.stats();
}

EngineConfig window_config(bool window_kv, int budget) {
  EngineConfig c = base_config();
  c.kv.window = window_kv;
  c.scheduler.max_batched_tokens = budget;
  c.scheduler.max_model_len = 200;
  c.scheduler.max_seqs = 8;
  return c;
}

TEST(EngineWindow, MixedLocalGlobalModelEqualsSessionAndWindowOff) {
  const std::vector<std::vector<Token>> prompts = long_prompts();
  std::vector<std::vector<Token>> want;
  auto ref = windowed_model("gemma3");
  for (const auto& p : prompts) want.push_back(session_greedy(*ref, p, 40));  // lengths 71..150 > window 20
  for (bool window_kv : {true, false})
    for (int budget : {64, 13}) {
      SCOPED_TRACE(std::string("window kv ") + (window_kv ? "on" : "off") + " budget " + std::to_string(budget));
      auto e = Engine::create(windowed_model("gemma3"), window_config(window_kv, budget));
      const EngineStats st = run_all(*e, prompts, want);
      EXPECT_EQ(st.preemptions, 0);
      if (window_kv) {
        // The planner's pool: 8 sequences x (2 + 2) blocks + one step's new tokens; 1 of 6 layers in the main one.
        EXPECT_EQ(st.kv_window_blocks_total, 8 * 4 + (budget + 15) / 16);
        EXPECT_GT(st.kv_window_blocks_peak, 0);
        EXPECT_LE(st.kv_window_blocks_peak, 5 * 4 + (budget + 15) / 16);
        EXPECT_EQ(st.kv_bytes_per_token * 5, st.kv_window_bytes_per_token);
      } else {
        EXPECT_EQ(st.kv_window_blocks_total, 0);
      }
    }
}

TEST(EngineWindow, EveryLayerWindowedRunsPastItsPoolWithoutPreemption) {
  const std::vector<std::vector<Token>> prompts = long_prompts();
  auto ref = windowed_model("llama");
  std::vector<std::vector<Token>> want;
  for (const auto& p : prompts) want.push_back(session_greedy(*ref, p, 40));
  // 24 blocks = 384 token slots for 5 requests of up to 150 tokens (616 in all): only windows fit.
  const int64_t bytes_per_token = 2 * 6 * 32 * 4;
  for (bool window_kv : {true, false}) {
    SCOPED_TRACE(std::string("window kv ") + (window_kv ? "on" : "off"));
    EngineConfig c = window_config(window_kv, 32);
    c.kv.memory_bytes = 24 * 16 * bytes_per_token;
    auto e = Engine::create(windowed_model("llama"), c);
    const EngineStats st = run_all(*e, prompts, want);
    EXPECT_EQ(st.kv_blocks_total, 24);
    if (window_kv) {
      EXPECT_EQ(st.preemptions, 0);
    } else {
      EXPECT_GT(st.preemptions, 0);  // the same pool without giving blocks back
    }
  }
}

// max_seqs 1 and a prompt longer than the window and two steps: the planner's window pool (1 x 4 + 4 blocks) takes
// each chunk because the previous chunk's blocks go back first (found by review: it preempted itself forever).
TEST(EngineWindow, LoneLongPromptFinishesWithMaxSeqsOne) {
  EngineConfig c = base_config();
  c.scheduler.max_batched_tokens = 64, c.scheduler.max_model_len = 256, c.scheduler.max_seqs = 1;
  auto e = Engine::create(windowed_model("gemma3"), c);
  std::vector<Token> prompt{1};
  for (int j = 0; j < 199; ++j) prompt.push_back(Token(3 + (j * 17) % 290));
  std::vector<Token> got;
  bool finished = false;
  e->add_request(greedy(prompt, 4), [&](const TokenEvent& ev) {
    if (ev.has_token) got.push_back(ev.token);
    finished = finished || ev.finished;
  });
  int steps = 0;
  for (; steps < 100 && e->has_work(); ++steps) e->step();
  EXPECT_TRUE(finished) << "not finished after " << steps << " steps";
  EXPECT_EQ(e->stats().preemptions, 0);
  EXPECT_EQ(e->stats().kv_window_blocks_total, 8);
  auto ref = windowed_model("gemma3");
  EXPECT_EQ(got, session_greedy(*ref, prompt, 4));
}

}  // namespace
}  // namespace tinfer

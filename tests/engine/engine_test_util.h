// Shared pieces of the engine tests: the models (stories260K, a peaky synthetic one), a small engine
// configuration, greedy requests, and runners that collect every sample's tokens.
#pragma once
#include <tinfer/engine.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "common/test_env.h"
#include "engine/session.h"
#include "backend/backend.h"
#include "model/model.h"
#include "model/synth/synth.h"

namespace tinfer::engine_test {

struct Sample {
  std::vector<Token> tokens;
  FinishReason reason = FinishReason::kNone;
  bool clamped = false;
  int cached = 0;
};
using Outputs = std::map<RequestId, std::vector<Sample>>;  // per request, per sample index

inline std::unique_ptr<Model> stories() {
  const std::string path = test::shared_file("models/stories260K.gguf");
  return path.empty() ? nullptr : Model::load(path);
}

inline std::unique_ptr<Model> synth_model() {
  SynthSpec s;
  s.weight_std = 0.3f;  // peaky logits: greedy choices are far from ties
  return Model::from_gguf_bytes(synthesize_model_bytes(s));
}

inline EngineConfig base_config() {
  EngineConfig c;
  c.threads = 2;
  c.kv.memory_bytes = 8 << 20;
  c.verbose = false;
  c.scheduler.max_batched_tokens = 64;
  // The tests compare the engine token for token with an f32 Session (session_greedy) or each other: pinned to
  // the f32 cache (EngineConfig's default is f16; test_engine_kv_default.cpp checks that default end to end).
  // Likewise K smoothing at load stays off: the int8/int4 tests compare with Sessions on the plain types.
  c.kv.dtype = KvDtype::f32;
  c.kv.k_smooth_at_load = false;
  return c;
}

// Greedy on one batch-1 Session (every block kept): the prompt in one forward, then one token per step.
inline std::vector<Token> session_greedy(const Model& m, const std::vector<Token>& prompt, int n,
                                         BackendOptions opts = BackendOptions{.threads = 2}) {
  auto be = create_backend("cpu", m, opts);
  Session s(*be, std::min<int64_t>(256, be->max_positions()));
  const std::vector<float>* l = &s.feed(prompt);
  std::vector<Token> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(Token(std::max_element(l->begin(), l->end()) - l->begin()));
    l = &s.feed_token(out.back());
  }
  return out;
}

inline GenerationRequest greedy(std::vector<Token> prompt, int max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

// Adds every request (ids returned in order), steps until idle, collects every sample's tokens.
inline Outputs run(Engine& e, const std::vector<GenerationRequest>& reqs, std::vector<RequestId>* ids = nullptr) {
  Outputs out;
  for (const auto& r : reqs) {
    const RequestId id = e.add_request(r, [&out](const TokenEvent& ev) {
      auto& v = out[ev.id];
      if (v.size() <= size_t(ev.index)) v.resize(ev.index + 1);
      Sample& s = v[ev.index];
      if (ev.has_token) s.tokens.push_back(ev.token);
      if (ev.finished) s.reason = ev.finish_reason;
      s.clamped = ev.clamped;
      s.cached = std::max(s.cached, ev.cached_prompt_tokens);
    });
    if (ids) ids->push_back(id);
  }
  while (e.has_work()) e.step();
  return out;
}

// Deterministic, distinct prompts of assorted lengths (BOS = 1 first).
inline std::vector<std::vector<Token>> prompts(int count, int vocab) {
  std::vector<std::vector<Token>> p;
  for (int i = 0; i < count; ++i) {
    std::vector<Token> t{1};
    for (int j = 0; j < 5 + 7 * i; ++j) t.push_back(Token(3 + (i * 131 + j * 17) % (vocab - 3)));
    p.push_back(t);
  }
  return p;
}

inline std::vector<std::vector<Token>> tokens_of(const Outputs& o) {
  std::vector<std::vector<Token>> v;
  for (const auto& [id, samples] : o)
    for (const Sample& s : samples) v.push_back(s.tokens);
  return v;
}

inline std::vector<std::vector<Token>> run_greedy(std::unique_ptr<Model> m, EngineConfig c,
                                           const std::vector<std::vector<Token>>& ps, int max_tokens,
                                           EngineStats* stats = nullptr) {
  auto e = Engine::create(std::move(m), c);
  std::vector<GenerationRequest> reqs;
  for (const auto& p : ps) reqs.push_back(greedy(p, max_tokens));
  auto out = tokens_of(run(*e, reqs));
  if (stats) *stats = e->stats();
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
  return out;
}

// Prefix hit == miss under `c` (stories260K): a 55-token prompt (three full blocks) run twice through one engine
// hits 48 cached tokens the second time and gives the same tokens, which also equal a run without caching.
inline void expect_prefix_hit_equals_miss(const EngineConfig& c) {
  const std::vector<Token> prompt = prompts(8, 512).back();
  auto e = Engine::create(stories(), c);
  const Outputs first = run(*e, {greedy(prompt, 16)});
  const Outputs second = run(*e, {greedy(prompt, 16)});
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(first.begin()->second[0].cached, 0);
  EXPECT_EQ(second.begin()->second[0].cached, 48);
  EXPECT_EQ(first.begin()->second[0].tokens, second.begin()->second[0].tokens);
  EXPECT_GT(e->stats().prefix_hit_rate, 0.4);
  EngineConfig off = c;
  off.kv.prefix_caching = false;
  EXPECT_EQ(run_greedy(stories(), off, {prompt}, 16)[0], first.begin()->second[0].tokens);
}

// Preempted == uninterrupted under `c` (stories260K): 6 requests in a pool of 10 blocks of bytes_per_token each.
inline void expect_preempted_equals_uninterrupted(const EngineConfig& c, int64_t bytes_per_token) {
  const auto ps = prompts(6, 512);
  EngineConfig tiny = c;
  tiny.scheduler.max_model_len = 128;
  tiny.kv.memory_bytes = bytes_per_token * 160;  // 10 blocks for 6 x ~70 tokens
  EngineStats st;
  const auto pre = run_greedy(stories(), tiny, ps, 40, &st);
  EXPECT_GT(st.preemptions, 0);
  EXPECT_EQ(pre, run_greedy(stories(), c, ps, 40));
}

}  // namespace tinfer::engine_test

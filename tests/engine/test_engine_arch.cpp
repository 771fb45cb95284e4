// Every architecture family through the serving engine with prefix caching: a second request that shares the
// first's prompt prefix reuses its cached blocks (the hit is checked) and both answers equal a batch-1 Session's,
// for qwen2 (biases), qwen3 (q/k norms), phi3 (fused tensors, LongRoPE), gemma3 (local/global layers) and Llama 3
// (RoPE factors): the cached K/V of one family's blocks is what a fresh prefill computes.
#include <tinfer/engine.h>

#include <gtest/gtest.h>

#include "engine_test_util.h"
#include "model/rope.h"

namespace tinfer {
namespace {

using namespace engine_test;

SynthSpec family(const std::string& arch) {
  SynthSpec s;
  s.arch = arch, s.rope_layout = RopeLayout::neox;
  s.dim = 64, s.n_layers = arch == "gemma3" ? 6 : 2, s.n_heads = 4, s.n_kv_heads = 2, s.ffn_dim = 96, s.n_vocab = 300;
  s.ctx_len = 256, s.weight_std = 0.3f, s.seed = 21, s.tied_embeddings = arch == "gemma3";
  if (arch == "qwen3" || arch == "gemma3") s.head_dim = 32;
  if (arch == "gemma3") s.sliding_window = 24;
  if (arch == "phi3") {  // LongRoPE beyond 64 positions (the engine's context is 200: the long factors)
    for (int i = 0; i < 8; ++i) s.rope_freq_factors.push_back(1.0f + 0.1f * float(i)), s.rope_factors_long.push_back(1.5f + float(i));
    s.rope_orig_ctx = 64, s.rope_attn_factor = 1.1f;
  }
  if (arch == "llama3") s.arch = "llama", s.rope_freq_factors = llama3_rope_factors(8.0, 1.0, 4.0, 8192.0, s.rope_base, 16);
  return s;
}

TEST(EngineArch, PrefixHitsAndAnswersEqualASessionForEveryFamily) {
  for (const char* arch : {"qwen2", "qwen3", "phi3", "gemma3", "llama3"}) {
    SCOPED_TRACE(arch);
    const SynthSpec spec = family(arch);
    std::vector<Token> a{1};
    for (int j = 0; j < 70; ++j) a.push_back(Token(3 + (j * 37) % 290));
    std::vector<Token> b(a.begin(), a.begin() + 64);  // shares four full blocks of 16
    for (int j = 0; j < 9; ++j) b.push_back(Token(40 + j));
    EngineConfig c = base_config();
    c.scheduler.max_model_len = 200, c.kv.block_size = 16, c.scheduler.max_batched_tokens = 32;  // (8 MiB: gemma3's window pool for fewer seqs)
    auto e = Engine::create(Model::from_gguf_bytes(synthesize_model_bytes(spec)), c);
    std::vector<RequestId> ids;
    Outputs out = run(*e, {greedy(a, 12)}, &ids);
    Outputs second = run(*e, {greedy(b, 12)}, &ids);
    out.insert(second.begin(), second.end());
    EXPECT_EQ(out.at(ids[1])[0].cached, 64);
    auto ref = Model::from_gguf_bytes(synthesize_model_bytes(spec));
    const BackendOptions opts{.threads = 2, .max_positions = 200};
    EXPECT_EQ(out.at(ids[0])[0].tokens, session_greedy(*ref, a, 12, opts));
    EXPECT_EQ(out.at(ids[1])[0].tokens, session_greedy(*ref, b, 12, opts));
  }
}

}  // namespace
}  // namespace tinfer

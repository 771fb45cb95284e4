// The architectures beyond Llama (model/arch/qwen.cpp, phi3.cpp): the fast forward against the reference on random
// tiny models of each family's shape -- qwen2 (Q/K/V biases), qwen3 (per-head q/k RMSNorm, head_dim apart from
// dim / heads), phi3 (fused QKV and gate|up tensors) -- every weight type, grouped-query attention, ragged prefill chunks, decode token by token; the
// loader names a missing or mis-shaped family tensor; the synthetic spec refuses what the family cannot be.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "engine/session.h"
#include "forward_test_util.h"
#include "backend/cpu/cpu_forward.h"
#include "formats/gguf.h"
#include "backend/cpu/reference_forward.h"
#include "model/rope.h"
#include "model/synth/synth.h"

namespace tinfer {
namespace {

using forward_test::nmse;

struct ArchShape {
  const char* arch;
  int64_t dim, layers, heads, kv_heads, head_dim, ffn, vocab;
  bool tied;
  int64_t window = 0;  // sliding window (llama: every layer; gemma3: the local layers)
};
const ArchShape kShapes[] = {
    {"qwen2", 64, 2, 8, 2, 8, 172, 300, true},     // GQA 4:1, biases on q, k, v
    {"qwen2", 128, 1, 2, 2, 64, 96, 280, false},   // MHA
    {"qwen3", 64, 2, 4, 2, 32, 160, 300, true},    // q_dim 128 != dim 64, like Qwen3's head_dim 128
    {"qwen3", 256, 1, 2, 1, 128, 224, 290, false},
    {"phi3", 64, 2, 4, 4, 16, 160, 300, false},    // fused QKV and gate|up, MHA like Phi-3 mini
    {"phi3", 128, 1, 4, 2, 32, 96, 280, true},     // fused, GQA
    {"gemma3", 64, 6, 4, 1, 32, 160, 300, true, 5},  // 5 local layers (window 5, RoPE base 10000) + 1 global, MQA
    {"gemma3", 96, 2, 2, 2, 48, 128, 280, true, 7},  // two local layers
    {"llama", 64, 2, 4, 2, 16, 96, 300, false, 6},   // Mistral-style window on every layer
};

struct TypeCase {
  DType type;
  double max_nmse;  // int8 activations on the integer paths
};
const TypeCase kTypes[] = {{DType::F32, 1e-9},
                           {DType::F16, 1e-9},
                           {DType::BF16, forward_test::bf16_weights_nmse()},
                           {DType::Q8_0, 2e-3},
                           {DType::Q4_0, 2e-3}, {DType::Q5_1, 2e-3}, {DType::Q4_K, 2e-3}, {DType::Q6_K, 2e-3}};

SynthSpec spec_of(const ArchShape& s, DType type) {
  SynthSpec spec;
  spec.arch = s.arch, spec.rope_layout = RopeLayout::neox;
  spec.dim = s.dim, spec.n_layers = s.layers, spec.n_heads = s.heads, spec.n_kv_heads = s.kv_heads;
  spec.head_dim = s.head_dim, spec.ffn_dim = s.ffn, spec.n_vocab = s.vocab, spec.ctx_len = 128;
  spec.tied_embeddings = s.tied, spec.weight_type = type, spec.seed = 5, spec.weight_std = 0.08f;
  spec.sliding_window = s.window;
  return spec;
}

std::vector<int32_t> tokens(int n, int64_t vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[size_t(i)] = int32_t((i * 41 + 7) % vocab);
  return t;
}

TEST(Arch, FastMatchesReferenceForEveryFamilyShapeAndType) {
  ThreadPool pool(2);
  for (const ArchShape& s : kShapes) {
    for (const TypeCase& tc : kTypes) {
      SCOPED_TRACE(std::string(s.arch) + " dim " + std::to_string(s.dim) + " type " + std::to_string(int(tc.type)));
      auto model = Model::from_gguf_bytes(synthesize_model_bytes(spec_of(s, tc.type)));
      ASSERT_EQ(model->config().arch, s.arch);
      EXPECT_EQ(model->config().rope_layout, RopeLayout::neox);
      CpuForward fwd(*model, pool);
      Session session(fwd, 64);
      const std::vector<int32_t> t = tokens(17, s.vocab);
      std::vector<float> fast;
      session.feed_all_logits(t, fast, 5);  // ragged chunks: 5+5+5+2
      const auto want = ReferenceForward(*model).logits(t);
      for (size_t i = 0; i < t.size(); ++i) {
        const std::vector<float> row(fast.begin() + int64_t(i) * s.vocab, fast.begin() + int64_t(i + 1) * s.vocab);
        EXPECT_LT(nmse(row, want[i]), tc.max_nmse) << "position " << i;
      }
    }
  }
}

// Gemma 3's configuration as read from the file: five local layers then a global one, the local RoPE base,
// sqrt(dim) embedding scale, 1/sqrt(head_dim) query scale, GeGLU.
TEST(Arch, Gemma3ConfigurationFromTheFile) {
  auto model = Model::from_gguf_bytes(synthesize_model_bytes(spec_of(kShapes[6], DType::F32)));
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.sliding_window, 5);
  EXPECT_EQ(c.swa_layers, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(c.window(0), 5);
  EXPECT_EQ(c.window(5), 0);
  EXPECT_TRUE(c.local_rope(4));
  EXPECT_FALSE(c.local_rope(5));
  EXPECT_FLOAT_EQ(c.rope_base_swa, 10000.f);
  EXPECT_FLOAT_EQ(c.embed_scale, 8.f);
  EXPECT_FLOAT_EQ(c.scores_scale(), 1.f / std::sqrt(32.f));
  EXPECT_EQ(c.ffn_act, FfnAct::gelu_tanh);
  EXPECT_TRUE(c.tied_output);
  ASSERT_NE(model->tensors().layers[0].post_attn_norm, nullptr);
  ASSERT_NE(model->tensors().layers[0].post_ffn_norm, nullptr);
}

// The window is applied, and only where it cuts: the same weights without a window give the same logits up to
// the window's length and different ones after it (in the reference and the fast path alike).
TEST(Arch, SlidingWindowChangesLogitsOnlyPastTheWindow) {
  ThreadPool pool(2);
  for (const ArchShape& s : {kShapes[6], kShapes[8]}) {
    SCOPED_TRACE(s.arch);
    ArchShape full = s;
    full.window = 1000;  // wider than the sequence: no cut (gemma3 files always name a window)
    auto windowed = Model::from_gguf_bytes(synthesize_model_bytes(spec_of(s, DType::F32)));
    auto unwindowed = Model::from_gguf_bytes(synthesize_model_bytes(spec_of(full, DType::F32)));
    const std::vector<int32_t> t = tokens(14, s.vocab);
    const auto a = ReferenceForward(*windowed).logits(t), b = ReferenceForward(*unwindowed).logits(t);
    for (size_t i = 0; i < t.size(); ++i) {
      if (int64_t(i) < s.window) EXPECT_LT(nmse(a[i], b[i]), 1e-12) << "position " << i;
      else EXPECT_GT(nmse(a[i], b[i]), 1e-6) << "position " << i;
    }
  }
}

// Decode (one token per step, reading the cache) equals prefill of the same tokens.
TEST(Arch, DecodeTokenByTokenEqualsPrefill) {
  ThreadPool pool(2);
  for (const ArchShape& s : {kShapes[0], kShapes[2], kShapes[6], kShapes[8]}) {
    SCOPED_TRACE(s.arch);
    auto model = Model::from_gguf_bytes(synthesize_model_bytes(spec_of(s, DType::Q8_0)));
    CpuForward fwd(*model, pool);
    const std::vector<int32_t> t = tokens(12, s.vocab);
    std::vector<float> all;
    Session(fwd, 64).feed_all_logits(t, all, 12);
    Session one(fwd, 64);
    for (size_t i = 0; i < t.size(); ++i) {
      const std::vector<float>& step = one.feed_token(t[i]);
      const std::vector<float> row(all.begin() + int64_t(i) * s.vocab, all.begin() + int64_t(i + 1) * s.vocab);
      EXPECT_LT(nmse(step, row), 1e-10) << "position " << i;
    }
  }
}

// A family's reader on a file of the other family (every "qwenN" in the file renamed: the metadata keys and the
// architecture) names the tensor it misses: qwen2 the Q bias, qwen3 the q norm.
TEST(Arch, LoaderNamesAMissingFamilyTensor) {
  for (const auto& [from, to, missing] : {std::tuple{"qwen3", "qwen2", "missing tensor 'blk.0.attn_q.bias'"},
                                          {"qwen2", "qwen3", "missing tensor 'blk.0.attn_q_norm.weight'"}}) {
    SynthSpec spec = spec_of(kShapes[from == std::string("qwen2") ? 0 : 2], DType::F32);
    std::vector<uint8_t> bytes = synthesize_model_bytes(spec);
    const std::string a = from, b = to;
    int renamed = 0;
    for (size_t i = 0; i + a.size() <= bytes.size(); ++i)
      if (std::equal(a.begin(), a.end(), bytes.begin() + int64_t(i))) std::copy(b.begin(), b.end(), bytes.begin() + int64_t(i)), ++renamed;
    ASSERT_GT(renamed, 5);
    try {
      Model::from_gguf_bytes(bytes);
      ADD_FAILURE() << to << " loaded a " << from << " file";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    }
  }
}

// Llama 3's RoPE scaling for Llama 3.1 8B (base 500000, head_dim 128, factor 8, low 1, high 4, original 8192),
// derived by hand: wavelength 2 pi 500000^(i/64) is below 8192/4 for i <= 28 (kept), above 8192 for i >= 35
// (divided by 8), blended between.
TEST(Arch, Llama3RopeFactors) {
  const std::vector<float> f = llama3_rope_factors(8, 1, 4, 8192, 500000, 128);
  ASSERT_EQ(f.size(), 64u);
  for (size_t i = 0; i < 64; ++i) {
    if (i <= 28) EXPECT_EQ(f[i], 1.0f) << i;
    else if (i >= 35) EXPECT_EQ(f[i], 8.0f) << i;
    else EXPECT_TRUE(f[i] > 1.0f && f[i] < 8.0f && f[i] > f[i - 1]) << i << " " << f[i];
  }
  EXPECT_THROW(llama3_rope_factors(8, 4, 1, 8192, 500000, 128), Error);  // low above high
}

// A Llama model with rope_freqs.weight: the factors load as written, the fast path matches the reference, and
// they take effect (the reference without them differs).
TEST(Arch, Llama3RopeScalingMatchesTheReference) {
  ThreadPool pool(2);
  SynthSpec spec;
  spec.dim = 64, spec.n_layers = 2, spec.n_heads = 4, spec.n_kv_heads = 2, spec.ffn_dim = 160, spec.n_vocab = 300;
  spec.ctx_len = 128, spec.rope_base = 500000, spec.weight_std = 0.08f, spec.seed = 9;
  spec.rope_freq_factors = llama3_rope_factors(8, 1, 4, 16, 500000, 16);  // a tiny original context: all three regimes
  auto model = Model::from_gguf_bytes(synthesize_model_bytes(spec));
  EXPECT_EQ(model->config().rope_freq_factors, spec.rope_freq_factors);
  CpuForward fwd(*model, pool);
  const std::vector<int32_t> t = tokens(40, 300);
  std::vector<float> fast;
  Session(fwd, 64).feed_all_logits(t, fast, 7);
  const auto want = ReferenceForward(*model).logits(t);
  SynthSpec plain = spec;
  plain.rope_freq_factors.clear();
  auto unscaled = Model::from_gguf_bytes(synthesize_model_bytes(plain));
  const auto other = ReferenceForward(*unscaled).logits(t);
  for (size_t i = 0; i < t.size(); ++i) {
    const std::vector<float> row(fast.begin() + int64_t(i) * 300, fast.begin() + int64_t(i + 1) * 300);
    EXPECT_LT(nmse(row, want[i]), 1e-9) << "position " << i;
  }
  EXPECT_GT(nmse(want.back(), other.back()), 1e-6);
  SynthSpec bad = spec;
  bad.rope_freq_factors.pop_back();
  EXPECT_FALSE(bad.validate().empty());
}

// A synthesized phi3 file rewritten with extra metadata or tensors.
std::vector<uint8_t> phi3_with(const std::function<void(GgufWriter&)>& extra) {
  const std::vector<uint8_t> bytes = synthesize_model_bytes(spec_of(kShapes[4], DType::F32));
  const GgufFile f = GgufFile::from_bytes(bytes.data(), bytes.size());
  GgufWriter w;
  for (const auto& [k, v] : f.metadata()) w.set(k, v);
  for (const GgufTensor& t : f.tensors()) w.add_tensor(t.name, t.type, t.shape, t.data, t.bytes);
  extra(w);
  return w.to_bytes();
}

// Phi-3's window on every layer (the context stays the model's); the window placement itself is tested with the
// Mistral-style shape above. A LongRoPE file missing one of its two factor tensors is refused.
TEST(Arch, Phi3SlidingWindowOnEveryLayerAndHalfALongRopeIsRefused) {
  auto windowed = Model::from_gguf_bytes(phi3_with([](GgufWriter& w) { w.set_u32("phi3.attention.sliding_window", 47); }));
  EXPECT_EQ(windowed->config().ctx_len, 128);
  EXPECT_EQ(windowed->config().sliding_window, 47);
  EXPECT_EQ(windowed->config().window(0), 47);
  EXPECT_EQ(windowed->config().window(1), 47);
  const std::vector<float> f(8, 1.0f);  // rope_dim 16 / 2
  try {
    Model::from_gguf_bytes(phi3_with([&](GgufWriter& w) {
      w.add_tensor("rope_factors_long.weight", DType::F32, {8}, f.data(), f.size() * 4);
    }));
    ADD_FAILURE() << "a LongRoPE file without its short factors loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rope_factors_short"), std::string::npos) << e.what();
  }
}

// Phi-3 LongRoPE: the short factors while the forward's context is within the original one, the long ones beyond
// it, cos and sin scaled by the attention factor -- the fast path equals the reference configured for the same
// context, and the two factor sets (and the attention factor) really change the logits.
TEST(Arch, Phi3LongRopeFollowsTheConfiguredContext) {
  ThreadPool pool(2);
  SynthSpec spec = spec_of(kShapes[4], DType::F32);
  const int64_t half = spec.resolved_head_dim() / 2;
  for (int64_t i = 0; i < half; ++i) {
    spec.rope_freq_factors.push_back(1.0f + 0.05f * float(i));
    spec.rope_factors_long.push_back(1.0f + 0.9f * float(i));
  }
  spec.rope_orig_ctx = 32, spec.rope_attn_factor = 1.19f;
  auto model = Model::from_gguf_bytes(synthesize_model_bytes(spec));
  const ModelConfig& c = model->config();
  ASSERT_EQ(c.rope_freq_factors_long.size(), size_t(half));
  EXPECT_EQ(c.rope_orig_ctx, 32);
  EXPECT_FLOAT_EQ(c.rope_attn_factor, 1.19f);
  const std::vector<int32_t> t = tokens(17, kShapes[4].vocab);
  std::vector<std::vector<float>> by_ctx;
  for (int64_t ctx : {32, 128}) {  // short factors, then long ones
    SCOPED_TRACE("context " + std::to_string(ctx));
    CpuForward fwd(*model, pool, ctx);
    Session session(fwd, ctx);
    std::vector<float> fast;
    session.feed_all_logits(t, fast, 5);
    const auto want = ReferenceForward(*model, {}, ctx).logits(t);
    for (size_t i = 0; i < t.size(); ++i) {
      const std::vector<float> row(fast.begin() + int64_t(i) * kShapes[4].vocab, fast.begin() + int64_t(i + 1) * kShapes[4].vocab);
      EXPECT_LT(nmse(row, want[i]), 1e-9) << "position " << i;
    }
    by_ctx.push_back(want.back());
  }
  EXPECT_GT(nmse(by_ctx[0], by_ctx[1]), 1e-6);  // the factor sets differ where it shows
  spec.rope_attn_factor = 1.0f;
  auto plain = Model::from_gguf_bytes(synthesize_model_bytes(spec));
  EXPECT_GT(nmse(ReferenceForward(*plain, {}, 32).logits(t).back(), by_ctx[0]), 1e-6);
}

TEST(Arch, SynthRefusesWhatAFamilyCannotBe) {
  SynthSpec s = spec_of(kShapes[0], DType::F32);
  s.rope_layout = RopeLayout::interleaved;
  EXPECT_FALSE(s.validate().empty());
  s = spec_of(kShapes[0], DType::F32);
  s.arch = "gemma9";
  EXPECT_FALSE(s.validate().empty());
}

}  // namespace
}  // namespace tinfer

// Synthetic models: every weight type round-trips through GgufFile with the right shapes, types and
// metadata; the llama reader and tokenizer accept the result; same spec + seed gives the same bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <unistd.h>

#include "tinfer/error.h"
#include "model/arch/arch.h"
#include "formats/gguf.h"
#include "model/synth/synth.h"
#include "text/tokenizer/tokenizer.h"
#include "quant/type_table.h"

namespace tinfer {
namespace {

// GQA, head_dim 64, every row a multiple of 256 so even k-quants apply to all matrices.
SynthSpec small_spec(DType t) {
  SynthSpec s;
  s.name = "small";
  s.dim = 256, s.n_layers = 2, s.n_heads = 4, s.n_kv_heads = 2, s.ffn_dim = 512, s.n_vocab = 300, s.ctx_len = 64;
  s.weight_type = t;
  s.seed = 7;
  return s;
}

GgufFile load(const std::vector<uint8_t>& bytes) { return GgufFile::from_bytes(bytes.data(), bytes.size()); }

void expect_shape(const GgufFile& f, const std::string& name, std::vector<int64_t> shape, DType type) {
  const GgufTensor* t = f.tensor(name);
  ASSERT_NE(t, nullptr) << name;
  EXPECT_EQ(t->shape, shape) << name;
  EXPECT_EQ(t->type, type) << name;
}

TEST(Synth, EveryTypeRoundTrips) {
  // Every type of the table with its llama.cpp general.file_type (llama_ftype).
  const std::pair<DType, int> types[] = {{DType::F32, 0},   {DType::F16, 1},   {DType::BF16, 32}, {DType::Q8_0, 7},
                                         {DType::Q4_0, 2},  {DType::Q4_1, 3},  {DType::Q5_0, 8},  {DType::Q5_1, 9},
                                         {DType::Q2_K, 10}, {DType::Q3_K, 12}, {DType::Q4_K, 15}, {DType::Q5_K, 17},
                                         {DType::Q6_K, 18}};
  for (auto [t, ftype] : types) {
    SCOPED_TRACE(type_traits(t).name);
    const SynthSpec s = small_spec(t);
    const GgufFile f = load(synthesize_model_bytes(s));
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    EXPECT_EQ(f.get_int("general.file_type"), ftype);
    EXPECT_EQ(f.get_int("llama.embedding_length"), 256);
    EXPECT_EQ(f.get_int("llama.block_count"), 2);
    EXPECT_EQ(f.get_int("llama.attention.head_count"), 4);
    EXPECT_EQ(f.get_int("llama.attention.head_count_kv"), 2);
    EXPECT_EQ(f.get_int("llama.feed_forward_length"), 512);
    EXPECT_EQ(f.get_int("llama.rope.dimension_count"), 64);
    EXPECT_EQ(f.get_int("llama.vocab_size"), 300);
    EXPECT_EQ(f.tensors().size(), 1u + 2 * 9 + 2);
    expect_shape(f, "token_embd.weight", {256, 300}, t);
    expect_shape(f, "output.weight", {256, 300}, t);
    expect_shape(f, "output_norm.weight", {256}, DType::F32);
    expect_shape(f, "blk.1.attn_q.weight", {256, 256}, t);
    expect_shape(f, "blk.1.attn_k.weight", {256, 128}, t);
    expect_shape(f, "blk.1.attn_v.weight", {256, 128}, t);
    expect_shape(f, "blk.1.attn_output.weight", {256, 256}, t);
    expect_shape(f, "blk.0.ffn_gate.weight", {256, 512}, t);
    expect_shape(f, "blk.0.ffn_up.weight", {256, 512}, t);
    expect_shape(f, "blk.0.ffn_down.weight", {512, 256}, t);
    expect_shape(f, "blk.0.attn_norm.weight", {256}, DType::F32);
    // Dequantized weights: mean ~0, std ~0.02; norms ~1.
    const GgufTensor* w = f.tensor("blk.0.ffn_up.weight");
    std::vector<float> v(size_t(w->elements()));
    type_traits(w->type).to_float(w->data, v.data(), w->elements());
    double sum = 0, sq = 0;
    for (float x : v) sum += x, sq += double(x) * x;
    const double mean = sum / double(v.size()), sd = std::sqrt(sq / double(v.size()) - mean * mean);
    EXPECT_NEAR(mean, 0.0, 1e-3);
    EXPECT_NEAR(sd, 0.02, 0.003);
    const float* norm = reinterpret_cast<const float*>(f.tensor("blk.0.attn_norm.weight")->data);
    for (int i = 0; i < 256; ++i) EXPECT_NEAR(norm[i], 1.0f, 0.2f);
  }
}

TEST(Synth, Deterministic) {
  SynthSpec s = small_spec(DType::Q4_0);
  const auto a = synthesize_model_bytes(s, 1);
  EXPECT_EQ(a, synthesize_model_bytes(s, 1));
  EXPECT_EQ(a, synthesize_model_bytes(s, 2)) << "thread count must not change the bytes";
  s.seed = 8;
  EXPECT_NE(a, synthesize_model_bytes(s, 1));
}

TEST(Synth, VariantsLoadThroughTheLlamaReader) {
  struct Case {
    int64_t dim, heads, kv, head_dim, ffn;
    bool tied;
    RopeLayout layout;
    DType type;
  };
  for (const Case& c : std::vector<Case>{
           {32, 4, 4, 8, 48, true, RopeLayout::interleaved, DType::F32},     // MHA, head_dim 8
           {64, 4, 1, 0, 33, false, RopeLayout::neox, DType::Q8_0},          // MQA, odd ffn -> f16 fallback
           {128, 2, 1, 128, 160, false, RopeLayout::neox, DType::Q4_K},      // head_dim 128, q_dim != dim
       }) {
    SynthSpec s;
    s.dim = c.dim, s.n_heads = c.heads, s.n_kv_heads = c.kv, s.head_dim = c.head_dim, s.ffn_dim = c.ffn;
    s.tied_embeddings = c.tied, s.rope_layout = c.layout, s.weight_type = c.type, s.n_vocab = 259 + 64;
    const GgufFile f = load(synthesize_model_bytes(s));
    const ArchSpec* arch = find_arch("llama");
    ASSERT_NE(arch, nullptr);
    const ModelConfig cfg = arch->read_config(f);
    EXPECT_EQ(cfg.dim, c.dim);
    EXPECT_EQ(cfg.head_dim, s.resolved_head_dim());
    EXPECT_EQ(cfg.n_kv_heads, c.kv);
    EXPECT_EQ(cfg.ffn_dim, c.ffn);
    EXPECT_EQ(cfg.tied_output, c.tied);
    EXPECT_EQ(cfg.rope_layout, c.layout);
    EXPECT_EQ(f.get_string("tinfer.rope.layout").has_value(), c.layout == RopeLayout::neox);
    EXPECT_NO_THROW(arch->bind_tensors(f, cfg));
    const DType down = f.tensor("blk.0.ffn_down.weight")->type;
    EXPECT_EQ(down, synth_tensor_type(c.type, c.ffn));
  }
  EXPECT_EQ(synth_tensor_type(DType::Q8_0, 33), DType::F16);
  EXPECT_EQ(synth_tensor_type(DType::Q4_K, 160), DType::Q8_0);
  EXPECT_EQ(synth_tensor_type(DType::Q4_K, 512), DType::Q4_K);
}

TEST(Synth, TokenizerLoadsAndRoundTrips) {
  const GgufFile f = load(synthesize_model_bytes(small_spec(DType::F16)));
  const auto names = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(names.size(), 300u);
  EXPECT_EQ(names[0], "<unk>");
  EXPECT_EQ(names[1], "<s>");
  EXPECT_EQ(names[3], "<0x00>");
  EXPECT_EQ(names[258], "<0xFF>");
  EXPECT_EQ(f.get_float_array("tokenizer.ggml.scores").size(), 300u);
  EXPECT_EQ(f.get_int_array("tokenizer.ggml.token_type").size(), 300u);
  auto tok = load_tokenizer(f);
  EXPECT_EQ(tok->n_vocab(), 300);
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  const std::string text = "the cat sat, 42 times! \xc3\xa9";  // includes a byte-fallback character
  const auto ids = tok->encode(text, true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(tok->decode(ids), text);
}

TEST(Synth, PresetsAndFile) {
  EXPECT_EQ(synth_preset_names(), (std::vector<std::string>{"tinyllama-1.1b", "llama-7b", "smollm2-135m", "stories15m",
                                                            "llama3.2-1b", "qwen2.5-0.5b", "qwen3-0.6b", "phi3-mini",
                                                            "mistral-7b", "gemma3-270m", "gemma3-1b"}));
  for (const auto& n : synth_preset_names()) {
    const SynthSpec* s = find_synth_preset(n);
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(s->validate().empty()) << n;
  }
  EXPECT_EQ(find_synth_preset("gpt-5"), nullptr);
  const SynthSpec* g = find_synth_preset("gemma3-270m");
  EXPECT_EQ(g->arch, "gemma3");
  EXPECT_EQ(g->sliding_window, 512);
  EXPECT_EQ(g->resolved_head_dim(), 256);
  EXPECT_EQ(find_synth_preset("mistral-7b")->sliding_window, 4096);
  const SynthSpec* t = find_synth_preset("tinyllama-1.1b");
  EXPECT_EQ(t->dim, 2048);
  EXPECT_EQ(t->n_kv_heads, 4);
  EXPECT_FALSE(t->tied_embeddings);
  const SynthSpec* sm = find_synth_preset("smollm2-135m");
  EXPECT_EQ(sm->resolved_head_dim(), 64);
  EXPECT_TRUE(sm->tied_embeddings);
  EXPECT_EQ(sm->rope_base, 100000.0f);
  const SynthSpec* q3 = find_synth_preset("qwen3-0.6b");
  EXPECT_EQ(q3->arch, "qwen3");
  EXPECT_EQ(q3->resolved_head_dim(), 128);  // not dim / heads = 64
  EXPECT_EQ(q3->rope_layout, RopeLayout::neox);
  EXPECT_EQ(find_synth_preset("qwen2.5-0.5b")->arch, "qwen2");
  const SynthSpec* l3 = find_synth_preset("llama3.2-1b");
  ASSERT_EQ(l3->rope_freq_factors.size(), 32u);  // head_dim 64: factor 32 on the longest wavelengths
  EXPECT_EQ(l3->rope_freq_factors.front(), 1.0f);
  EXPECT_EQ(l3->rope_freq_factors.back(), 32.0f);

  SynthSpec s = *find_synth_preset("stories15m");
  s.weight_type = DType::Q8_0;
  const std::string path = testing::TempDir() + "synth_stories15m_" + std::to_string(getpid()) + ".gguf";
  synthesize_model(s, path, 2);
  const GgufFile f = GgufFile::open(path);
  std::remove(path.c_str());
  EXPECT_EQ(f.get_string("general.name"), "stories15m");
  EXPECT_EQ(f.get_int("general.file_type"), 7);
  EXPECT_EQ(f.tensors().size(), 1u + 6 * 9 + 1);  // tied: no output.weight
  EXPECT_EQ(f.tensor("output.weight"), nullptr);
  expect_shape(f, "blk.5.ffn_down.weight", {768, 288}, DType::Q8_0);
  expect_shape(f, "token_embd.weight", {288, 32000}, DType::Q8_0);
}

TEST(Synth, ValidationReportsEveryProblem) {
  SynthSpec s;
  s.dim = 30, s.n_heads = 4, s.n_kv_heads = 3, s.n_vocab = 100, s.ffn_dim = 0, s.weight_std = -1;
  const auto errs = s.validate();
  EXPECT_EQ(errs.size(), 5u);  // ffn_dim, heads % kv, dim % heads, n_vocab, weight_std
  EXPECT_THROW(synthesize_model_bytes(s), Error);
}

}  // namespace
}  // namespace tinfer

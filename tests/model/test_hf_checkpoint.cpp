// Hugging Face checkpoints (model/hf/hf_checkpoint.h, hf_convert.h, synth_hf.h): for every family, a synthetic model
// written as GGUF and as an HF directory (sharded safetensors, BF16/F16/F32, tokenizer.json) gives the same logits
// from the GGUF, from `-m DIR` and from the converted GGUF (bit-identical where the weights are; llama's -m DIR
// rotates HF's rotate-half rows as neox pairs, equal up to summation order); the converted file holds the synthetic
// GGUF's tensors byte for byte and llama.cpp's key names; llama.cpp's q/k permutation on a hand-computed case; the
// Gemma 3 table row up to the GGUF view; refusals name the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "tinfer/error.h"
#include "formats/gguf.h"
#include "model/hf/hf_checkpoint.h"
#include "model/hf/hf_convert.h"
#include "model/model.h"
#include "backend/cpu/reference_forward.h"
#include "model/rope.h"
#include "formats/safetensors.h"
#include "model/synth/synth.h"
#include "model/synth/synth_hf.h"

namespace tinfer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A scratch directory removed when the test ends.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("tinfer_hf_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};

SynthSpec family(const std::string& arch, DType type) {
  SynthSpec s;
  s.arch = arch;
  s.rope_layout = arch == "llama" ? RopeLayout::interleaved : RopeLayout::neox;
  s.dim = 64, s.n_layers = 2, s.n_heads = 4, s.n_kv_heads = 2, s.ffn_dim = 96, s.n_vocab = 320, s.ctx_len = 64;
  s.weight_type = type, s.seed = 11, s.weight_std = 0.08f;
  if (arch == "qwen3") s.head_dim = 32;  // q_dim apart from dim, as Qwen 3
  if (arch == "phi3") s.n_kv_heads = 4;
  s.tied_embeddings = arch == "qwen2" || arch == "gemma3";
  if (arch == "gemma3") s.n_layers = 6, s.head_dim = 32, s.n_kv_heads = 1, s.sliding_window = 4;  // 5 local + 1 global
  return s;
}

const std::vector<int32_t> kTokens = {1, 300, 45, 7, 260, 99, 3, 150, 222, 18};

double max_rel_diff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j)
      worst = std::max(worst, std::abs(double(a[i][j]) - double(b[i][j])) / (1e-3 + std::abs(double(b[i][j]))));
  return worst;
}

TEST(HfCheckpoint, EveryFamilyGivesTheSameLogitsAsGgufDirAndConverted) {
  struct Case {
    const char* arch;
    DType type;
    bool llama3;
  };
  // scaled: Llama 3's RoPE factors (llama), LongRoPE (phi3).
  const Case cases[] = {{"llama", DType::BF16, false}, {"llama", DType::F32, true},  {"qwen2", DType::F16, false},
                        {"qwen3", DType::BF16, false}, {"phi3", DType::F32, false},  {"phi3", DType::F32, true},
                        {"gemma3", DType::BF16, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.arch) + " type " + std::to_string(int(c.type)));
    SynthSpec spec = family(c.arch, c.type);
    if (c.llama3 && std::string(c.arch) == "llama")
      spec.rope_freq_factors = llama3_rope_factors(8.0, 1.0, 4.0, 8192.0, spec.rope_base, 16);
    if (c.llama3 && std::string(c.arch) == "phi3") {  // LongRoPE: the attention factor as the converter computes it
      for (int i = 0; i < 8; ++i) spec.rope_freq_factors.push_back(1.0f + 0.25f * float(i)), spec.rope_factors_long.push_back(2.0f + float(i));
      spec.rope_orig_ctx = 16;
      spec.rope_attn_factor = float(std::sqrt(1.0 + std::log(64.0 / 16.0) / std::log(16.0)));
    }
    TempDir dir(c.arch);
    synthesize_hf_checkpoint(spec, dir / "hf", {.shards = 3});
    ASSERT_TRUE(fs::exists(dir / "hf/model.safetensors.index.json"));
    const auto gguf_model = Model::from_gguf_bytes(synthesize_model_bytes(spec));
    const auto dir_model = Model::load(dir / "hf");
    const HfConvertReport r = convert_hf_checkpoint(dir / "hf", dir / "out.gguf", "as-is");
    EXPECT_TRUE(r.validated);
    const auto conv_model = Model::load(dir / "out.gguf");

    // The converted file: the synthetic GGUF's tensors, byte for byte (llama: q/k permuted back to interleaved;
    // gemma3's norms went through HF's w = (1 + w) - 1 and back: within a rounding of 1).
    const bool gemma = std::string(c.arch) == "gemma3";
    for (const GgufTensor& t : gguf_model->gguf().tensors()) {
      const GgufTensor* o = conv_model->gguf().tensor(t.name);
      ASSERT_NE(o, nullptr) << t.name;
      EXPECT_EQ(o->type, t.type) << t.name;
      EXPECT_EQ(o->shape, t.shape) << t.name;
      if (gemma && t.name.ends_with("norm.weight")) {
        ASSERT_EQ(o->bytes, t.bytes);
        for (size_t i = 0; i < t.bytes / 4; ++i)
          EXPECT_NEAR(reinterpret_cast<const float*>(o->data)[i], reinterpret_cast<const float*>(t.data)[i], 2e-7) << t.name;
        continue;
      }
      EXPECT_TRUE(o->bytes == t.bytes && std::memcmp(o->data, t.data, t.bytes) == 0) << t.name;
    }
    EXPECT_EQ(conv_model->gguf().tensors().size(), gguf_model->gguf().tensors().size());
    EXPECT_FALSE(conv_model->gguf().find("tinfer.rope.layout"));

    const auto want = ReferenceForward(*gguf_model).logits(kTokens);
    if (gemma) {
      EXPECT_EQ(conv_model->config().swa_layers, gguf_model->config().swa_layers);
      EXPECT_EQ(dir_model->config().swa_layers, gguf_model->config().swa_layers);
      EXPECT_EQ(dir_model->config().rope_base_swa, gguf_model->config().rope_base_swa);
      EXPECT_LT(max_rel_diff(ReferenceForward(*conv_model).logits(kTokens), want), 1e-5);
    } else {
      EXPECT_EQ(ReferenceForward(*conv_model).logits(kTokens), want);  // bit-identical
    }
    const auto from_dir = ReferenceForward(*dir_model).logits(kTokens);
    if (gemma) {
      EXPECT_LT(max_rel_diff(from_dir, want), 1e-5);  // the norms' 1 + w rounded
    } else if (std::string(c.arch) == "llama") {
      EXPECT_EQ(dir_model->config().rope_layout, RopeLayout::neox);
      EXPECT_LT(max_rel_diff(from_dir, want), 1e-4);  // same model, other summation order in q.k
    } else {
      EXPECT_EQ(from_dir, want);  // the same bytes, mapped in place
    }
    EXPECT_EQ(dir_model->config().rope_freq_factors, gguf_model->config().rope_freq_factors);

    // The tokenizer.json vocabulary encodes like the synthetic SentencePiece one.
    for (const char* text : {"Once upon a time, the little girl named Lily saw a big dog.", "  tok 42 é 😀 x"}) {
      EXPECT_EQ(dir_model->tokenizer().encode(text, true), gguf_model->tokenizer().encode(text, true)) << text;
      EXPECT_EQ(conv_model->tokenizer().encode(text, true), gguf_model->tokenizer().encode(text, true)) << text;
    }
  }
}

TEST(HfCheckpoint, ConvertWritesLlamaCppKeysAndOuttypes) {
  SynthSpec spec = family("llama", DType::F32);
  TempDir dir("keys");
  synthesize_hf_checkpoint(spec, dir / "hf", {.shards = 1});
  convert_hf_checkpoint(dir / "hf", dir / "f16.gguf", "f16");
  const GgufFile g = GgufFile::open(dir / "f16.gguf");
  EXPECT_EQ(g.get_string("general.architecture"), "llama");
  EXPECT_EQ(g.get_int("general.file_type"), 1);
  for (const char* k : {"llama.block_count", "llama.context_length", "llama.embedding_length", "llama.feed_forward_length",
                        "llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.dimension_count",
                        "llama.vocab_size"})
    EXPECT_TRUE(g.get_int(k).has_value()) << k;
  EXPECT_EQ(g.get_int("llama.rope.dimension_count"), 16);
  EXPECT_NEAR(*g.get_float("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-12);
  EXPECT_EQ(g.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(g.get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(g.get_int("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_EQ(g.tensor("blk.0.attn_q.weight")->type, DType::F16);
  EXPECT_EQ(g.tensor("blk.0.attn_norm.weight")->type, DType::F32);  // 1-D tensors stay f32

  // attn_q's rows are HF's q_proj rows permuted as llama.cpp does (checked against the shard itself).
  const SafetensorsFile st = SafetensorsFile::open(dir / "hf/model.safetensors");
  const GgufTensor* hf_q = st.tensor("model.layers.1.self_attn.q_proj.weight");
  const GgufFile f32 = (convert_hf_checkpoint(dir / "hf", dir / "f32.gguf", "f32"), GgufFile::open(dir / "f32.gguf"));
  const GgufTensor* q = f32.tensor("blk.1.attn_q.weight");
  const size_t row = 64 * 4;
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t s = 0; s < 2; ++s)
        EXPECT_EQ(std::memcmp(q->data + size_t(h * 16 + 2 * i + s) * row, hf_q->data + size_t(h * 16 + s * 8 + i) * row, row), 0);
}

TEST(HfCheckpoint, PermutationMatchesAHandComputedCase) {
  // 2 heads of head_dim 4, one byte per row: HF rows r0..r7 -> within each head [r0 r2 r1 r3] (pairs interleaved).
  const uint8_t hf[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  uint8_t out[8], back[8];
  permute_qk_rows(hf, out, 2, 4, 1);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 8), (std::vector<uint8_t>{0, 2, 1, 3, 4, 6, 5, 7}));
  permute_qk_rows(out, back, 2, 4, 1, true);
  EXPECT_EQ(std::vector<uint8_t>(back, back + 8), std::vector<uint8_t>(hf, hf + 8));
  // head_dim 6: [r0 r3 r1 r4 r2 r5].
  const uint8_t six[6] = {0, 1, 2, 3, 4, 5};
  uint8_t o6[6];
  permute_qk_rows(six, o6, 1, 6, 1);
  EXPECT_EQ(std::vector<uint8_t>(o6, o6 + 6), (std::vector<uint8_t>{0, 3, 1, 4, 2, 5}));
}

void rewrite_json(const std::string& path, const std::function<void(json&)>& edit) {
  std::ifstream in(path);
  json j = json::parse(in);
  edit(j);
  std::ofstream(path) << j.dump();
}

std::string load_error(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(HfCheckpoint, RefusalsNameTheProblem) {
  TempDir dir("refuse");
  const SynthSpec spec = family("qwen2", DType::F32);
  auto fresh = [&](const std::string& name) {
    synthesize_hf_checkpoint(spec, dir / name, {.shards = 2});
    return dir / name;
  };
  {
    const std::string d = fresh("noconfig");
    fs::remove(d + "/config.json");
    EXPECT_NE(load_error(d).find("has no config.json"), std::string::npos) << load_error(d);
  }
  {
    const std::string d = fresh("arch");
    rewrite_json(d + "/config.json", [](json& j) { j["architectures"] = {"MambaForCausalLM"}; });
    const std::string e = load_error(d);
    EXPECT_NE(e.find("unknown architecture 'MambaForCausalLM'"), std::string::npos) << e;
    EXPECT_NE(e.find("Qwen2ForCausalLM"), std::string::npos) << e;
  }
  {
    const std::string d = fresh("layers");  // one more layer than the shards hold
    rewrite_json(d + "/config.json", [](json& j) { j["num_hidden_layers"] = 3; });
    EXPECT_NE(load_error(d).find("missing tensor 'blk.2.attn_norm.weight'"), std::string::npos) << load_error(d);
  }
  {
    const std::string d = fresh("shape");
    rewrite_json(d + "/config.json", [](json& j) { j["intermediate_size"] = 128; });
    EXPECT_NE(load_error(d).find("ffn_gate.weight' has shape [64, 96], expected [64, 128]"), std::string::npos)
        << load_error(d);
  }
  {
    const std::string d = fresh("truncated");
    const std::string shard = d + "/model-00002-of-00002.safetensors";
    fs::resize_file(shard, fs::file_size(shard) - 100);
    EXPECT_NE(load_error(d).find("truncated file?"), std::string::npos) << load_error(d);
  }
  {
    const std::string d = fresh("noshard");
    fs::remove(d + "/model-00001-of-00002.safetensors");
    EXPECT_NE(load_error(d).find("model-00001-of-00002.safetensors"), std::string::npos) << load_error(d);
  }
  {
    const std::string d = fresh("index");  // the index names a tensor its shard lacks
    rewrite_json(d + "/model.safetensors.index.json", [](json& j) { j["weight_map"]["model.layers.0.mlp.experts.w1"] = "model-00001-of-00002.safetensors"; });
    EXPECT_NE(load_error(d).find("lists 'model.layers.0.mlp.experts.w1'"), std::string::npos) << load_error(d);
  }
  {
    const std::string d = fresh("notok");
    fs::remove(d + "/tokenizer.json");
    EXPECT_NE(load_error(d).find("has no tokenizer.json"), std::string::npos) << load_error(d);
  }
}

// Gemma 3: the architecture itself is not in this branch, so its row is checked up to the GGUF view: names, keys,
// (1 + w) norms in f32, the language_model infix dropped and the vision tower skipped.
TEST(HfCheckpoint, Gemma3RowUpToTheView) {
  TempDir dir("gemma3");
  const int64_t dim = 32, hd = 16, heads = 2, kv = 1, ffn = 48, vocab = 300;
  std::vector<std::vector<uint8_t>> store;
  std::vector<SafetensorsEntry> t;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float v) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> f(size_t(n), v);
    auto& b = store.emplace_back(f.size() * 4);
    std::memcpy(b.data(), f.data(), b.size());
    t.push_back({name, DType::F32, shape, b.data(), b.size()});
  };
  const std::string p = "model.language_model.";
  add(p + "embed_tokens.weight", {dim, vocab}, 0.01f);
  add(p + "norm.weight", {dim}, 0.5f);
  add("model.vision_tower.vision_model.post_layernorm.weight", {8}, 0.0f);
  for (const char* n : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"})
    add(p + "layers.0." + n + ".weight", {dim}, 0.25f);
  add(p + "layers.0.self_attn.q_norm.weight", {hd}, -0.5f);
  add(p + "layers.0.self_attn.k_norm.weight", {hd}, -0.5f);
  add(p + "layers.0.self_attn.q_proj.weight", {dim, heads * hd}, 0.02f);
  add(p + "layers.0.self_attn.k_proj.weight", {dim, kv * hd}, 0.02f);
  add(p + "layers.0.self_attn.v_proj.weight", {dim, kv * hd}, 0.02f);
  add(p + "layers.0.self_attn.o_proj.weight", {heads * hd, dim}, 0.02f);
  add(p + "layers.0.mlp.gate_proj.weight", {dim, ffn}, 0.02f);
  add(p + "layers.0.mlp.up_proj.weight", {dim, ffn}, 0.02f);
  add(p + "layers.0.mlp.down_proj.weight", {ffn, dim}, 0.02f);
  fs::create_directories(dir.path / "g");
  write_safetensors(dir / "g/model.safetensors", t);
  std::ofstream(dir / "g/config.json")
      << json{{"architectures", {"Gemma3ForConditionalGeneration"}},
              {"text_config",
               {{"hidden_size", dim}, {"intermediate_size", ffn}, {"num_hidden_layers", 1}, {"num_attention_heads", heads},
                {"num_key_value_heads", kv}, {"head_dim", hd}, {"sliding_window", 512}, {"vocab_size", vocab},
                {"rope_theta", 1000000.0}, {"rms_norm_eps", 1e-6}}}}
             .dump();
  // Borrow a synthetic tokenizer.json.
  synthesize_hf_checkpoint(family("llama", DType::F32), dir / "tok", {.shards = 1});
  fs::copy(dir / "tok/tokenizer.json", dir / "g/tokenizer.json");
  rewrite_json(dir / "g/tokenizer.json", [&](json& j) {  // trim to the 300-token vocabulary
    json v = json::object();
    for (auto& [k, id] : j["model"]["vocab"].items())
      if (id.get<int>() < vocab) v[k] = id;
    j["model"]["vocab"] = v;
  });
  const GgufFile g = open_hf_checkpoint(dir / "g");
  EXPECT_EQ(g.get_string("general.architecture"), "gemma3");
  EXPECT_EQ(g.get_int("gemma3.attention.sliding_window"), 512);
  EXPECT_EQ(g.get_int("gemma3.attention.key_length"), hd);
  EXPECT_EQ(g.get_int("gemma3.attention.value_length"), hd);
  EXPECT_EQ(g.get_int("gemma3.attention.head_count_kv"), kv);
  EXPECT_EQ(g.get_int("gemma3.context_length"), 131072);  // llama.cpp's default when config.json has none
  EXPECT_NEAR(*g.get_float("gemma3.rope.freq_base"), 1e6, 1e-3);
  EXPECT_EQ(g.tensors().size(), 15u);  // vision tensor dropped
  for (const char* n : {"token_embd.weight", "output_norm.weight", "blk.0.attn_norm.weight", "blk.0.post_attention_norm.weight",
                        "blk.0.ffn_norm.weight", "blk.0.post_ffw_norm.weight", "blk.0.attn_q_norm.weight",
                        "blk.0.attn_k_norm.weight", "blk.0.attn_q.weight", "blk.0.attn_output.weight", "blk.0.ffn_gate.weight",
                        "blk.0.ffn_up.weight", "blk.0.ffn_down.weight"})
    EXPECT_NE(g.tensor(n), nullptr) << n;
  const GgufTensor* norm = g.tensor("blk.0.post_ffw_norm.weight");
  ASSERT_EQ(norm->type, DType::F32);
  EXPECT_EQ(reinterpret_cast<const float*>(norm->data)[0], 1.25f);  // 1 + w
  EXPECT_EQ(reinterpret_cast<const float*>(g.tensor("blk.0.attn_q_norm.weight")->data)[3], 0.5f);
  EXPECT_EQ(reinterpret_cast<const float*>(g.tensor("blk.0.ffn_gate.weight")->data)[0], 0.02f);  // not shifted
  EXPECT_EQ(g.tensor("blk.0.attn_q.weight")->shape, (std::vector<int64_t>{dim, heads * hd}));
}

}  // namespace
}  // namespace tinfer

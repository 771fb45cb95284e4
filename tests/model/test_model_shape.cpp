// ModelShape's three sources: the built-in table (its params agree with the shapes), config.json (the same
// shapes as the table for the same checkpoint; every malformed input refused with the key at fault), and a GGUF
// header (the same configuration and weight bytes as a full load; a non-GGUF file refused).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/test_env.h"
#include "tinfer/error.h"
#include "tinfer/kv_precision.h"
#include "model/model.h"
#include "model/model_shape.h"

namespace tinfer {
namespace {

using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The Hugging Face config.json of a table row, as the checkpoint publishes it (Llama keys).
json hf_config(const KnownModel& m) {
  json j = {{"architectures", {"LlamaForCausalLM"}},
            {"model_type", "llama"},
            {"num_hidden_layers", m.layers},
            {"num_attention_heads", m.heads},
            {"num_key_value_heads", m.kv_heads},
            {"hidden_size", m.hidden},
            {"intermediate_size", m.ffn},
            {"vocab_size", m.vocab},
            {"max_position_embeddings", m.ctx},
            {"tie_word_embeddings", m.tied_embeddings},
            {"torch_dtype", "bfloat16"}};
  if (m.attn_bias) j["model_type"] = "qwen2";  // Qwen2 configs do not say attention_bias
  return j;
}

TEST(ModelShape, TableParamsMatchTheirShapes) {
  ASSERT_GE(known_models().size(), 9u);
  for (const KnownModel& m : known_models()) {
    SCOPED_TRACE(m.name);
    const ModelShape s = model_shape_like(m.name, "");
    EXPECT_EQ(s.config.n_layers, m.layers);
    EXPECT_EQ(s.config.head_dim, m.head_dim);
    EXPECT_EQ(llama_param_count(s.config, m.tied_embeddings, m.attn_bias), m.params);
    EXPECT_EQ(s.weight_bytes, 2 * m.params);  // f16 by default
    EXPECT_FALSE(s.weight_bytes_exact);
  }
}

TEST(ModelShape, LikeKnownFacts) {
  const ModelShape l2 = model_shape_like("LLaMA-2-7B", "");  // case-insensitive
  EXPECT_EQ(KvPrecision::uniform(32, KvDtype::f16).bytes_per_token(l2.config.n_kv_heads, l2.config.head_dim), 524288);
  const ModelShape l3 = model_shape_like("llama-3-8b", "q4_0");  // GQA: 8 of 32 heads keep K/V
  EXPECT_EQ(KvPrecision::uniform(32, KvDtype::f16).bytes_per_token(l3.config.n_kv_heads, l3.config.head_dim), 131072);
  EXPECT_EQ(l3.weight_bytes, (l3.params + 31) / 32 * 18);
  EXPECT_EQ(model_shape_like("tinyllama-1.1b", "").config.kv_bytes_per_token(2), 22528);
  const std::string e = error_of([] { model_shape_like("llama-9b", ""); });
  EXPECT_NE(e.find("unknown --like model 'llama-9b'"), std::string::npos) << e;
  EXPECT_NE(e.find("smollm2-135m"), std::string::npos) << e;  // names the known ones
  EXPECT_NE(error_of([] { model_shape_like("llama-2-7b", "q9_9"); }).find("unknown weight type 'q9_9'"),
            std::string::npos);
}

TEST(ModelShape, WeightBytesAs) {
  EXPECT_EQ(weight_bytes_as(64, "q4_0"), 2 * 18);
  EXPECT_EQ(weight_bytes_as(65, "q8_0"), 3 * 34);  // a partial block still takes its scale
  EXPECT_EQ(weight_bytes_as(256, "q4_k"), 144);
  EXPECT_EQ(weight_bytes_as(10, "bf16"), 20);
  EXPECT_EQ(weight_bytes_as(10, "f32"), 40);
}

TEST(ModelShape, HfConfigEqualsTheTable) {
  for (const KnownModel& m : known_models()) {
    SCOPED_TRACE(m.name);
    const ModelShape like = model_shape_like(m.name, "");
    const ModelShape hf = model_shape_from_hf_config_text(hf_config(m).dump(), "config.json", "");
    EXPECT_EQ(hf.config.n_layers, like.config.n_layers);
    EXPECT_EQ(hf.config.n_heads, like.config.n_heads);
    EXPECT_EQ(hf.config.n_kv_heads, like.config.n_kv_heads);
    EXPECT_EQ(hf.config.head_dim, like.config.head_dim);
    EXPECT_EQ(hf.config.dim, like.config.dim);
    EXPECT_EQ(hf.config.ffn_dim, like.config.ffn_dim);
    EXPECT_EQ(hf.config.n_vocab, like.config.n_vocab);
    EXPECT_EQ(hf.config.ctx_len, like.config.ctx_len);
    EXPECT_EQ(hf.config.tied_output, like.config.tied_output);
    EXPECT_EQ(hf.params, m.params);
    EXPECT_EQ(hf.weight_type, "bf16");  // from torch_dtype
    EXPECT_EQ(hf.weight_bytes, 2 * m.params);
  }
}

TEST(ModelShape, HfConfigOptionalKeys) {
  json j = hf_config(known_models()[1]);  // llama-2-7b
  j.erase("num_key_value_heads");         // absent: every head keeps its K/V
  j.erase("torch_dtype");
  j["dtype"] = "float32";  // newer transformers
  ModelShape s = model_shape_from_hf_config_text(j.dump(), "c.json", "");
  EXPECT_EQ(s.config.n_kv_heads, 32);
  EXPECT_EQ(s.weight_type, "f32");
  EXPECT_EQ(model_shape_from_hf_config_text(j.dump(), "c.json", "q8_0").weight_type, "q8_0");  // --weight-type wins
  j["head_dim"] = 64;  // an explicit head_dim that is not hidden / heads
  j["num_key_value_heads"] = 8;
  s = model_shape_from_hf_config_text(j.dump(), "c.json", "");
  EXPECT_EQ(s.config.head_dim, 64);
  EXPECT_EQ(s.config.kv_bytes_per_token(2), 2 * 32 * 8 * 64 * 2);
  j["head_dim"] = nullptr;  // null means absent
  EXPECT_EQ(model_shape_from_hf_config_text(j.dump(), "c.json", "").config.head_dim, 128);
}

TEST(ModelShape, HfConfigRefusesMalformedInput) {
  auto err = [](const std::string& text) {
    return error_of([&] { model_shape_from_hf_config_text(text, "my/config.json", ""); });
  };
  EXPECT_NE(err("{\"num_hidden_layers\": 2,").find("my/config.json: malformed JSON"), std::string::npos);
  EXPECT_NE(err("[1, 2]").find("a config.json is a JSON object, got array"), std::string::npos);
  // Every missing key at once.
  const std::string missing = err("{\"num_hidden_layers\": 2}");
  for (const char* k : {"num_attention_heads", "hidden_size", "intermediate_size", "vocab_size"})
    EXPECT_NE(missing.find(std::string("missing key '") + k + "'"), std::string::npos) << missing;
  EXPECT_EQ(missing.find("num_hidden_layers"), std::string::npos) << missing;
  json j = hf_config(known_models()[0]);
  j["num_key_value_heads"] = "4";
  EXPECT_NE(err(j.dump()).find("'num_key_value_heads' must be a positive integer, got \"4\""), std::string::npos);
  j = hf_config(known_models()[0]);
  j["hidden_size"] = -2048;
  EXPECT_NE(err(j.dump()).find("'hidden_size' must be a positive integer, got -2048"), std::string::npos);
  j = hf_config(known_models()[0]);
  j["num_key_value_heads"] = 5;  // 32 heads do not divide into 5 groups
  EXPECT_NE(err(j.dump()).find("not a multiple of kv head count 5"), std::string::npos) << err(j.dump());
  j = hf_config(known_models()[0]);
  j["torch_dtype"] = "float8_e4m3fn";
  EXPECT_NE(err(j.dump()).find("torch_dtype 'float8_e4m3fn'"), std::string::npos);
  j = hf_config(known_models()[0]);
  j["tie_word_embeddings"] = 1;
  EXPECT_NE(err(j.dump()).find("'tie_word_embeddings' must be true or false"), std::string::npos);
  EXPECT_NE(
      error_of([] { model_shape_from_hf_config("/nonexistent/config.json", ""); }).find("cannot open config file"),
      std::string::npos);
}

TEST(ModelShape, GgufHeaderEqualsFullLoad) {
  const std::string path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  const ModelShape s = model_shape_from_gguf(path);
  const auto m = Model::load(path);
  const ModelConfig& a = s.config;
  const ModelConfig& b = m->config();
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.dim, b.dim);
  EXPECT_EQ(a.ffn_dim, b.ffn_dim);
  EXPECT_EQ(a.n_vocab, b.n_vocab);
  EXPECT_EQ(a.ctx_len, b.ctx_len);
  EXPECT_EQ(s.weight_bytes, int64_t(m->weight_bytes()));
  EXPECT_TRUE(s.weight_bytes_exact);
  int64_t elements = 0;
  for (const GgufTensor& t : m->gguf().tensors()) elements += t.elements();
  EXPECT_EQ(s.params, elements);
}

TEST(ModelShape, GgufRefusesOtherFiles) {
  const auto p = std::filesystem::path(::testing::TempDir()) / ("tinfer_shape_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << "{\"num_hidden_layers\": 2}";
  const std::string e = error_of([&] { model_shape_from_gguf(p.string()); });
  std::filesystem::remove(p);
  EXPECT_NE(e.find("is not a GGUF file"), std::string::npos) << e;
  EXPECT_NE(error_of([] { model_shape_from_gguf("/nonexistent/m.gguf"); }).find("does not exist"), std::string::npos);
}

}  // namespace
}  // namespace tinfer

// ModelShape from a Hugging Face config.json (Llama-family keys); every missing or malformed key is reported at once.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "tinfer/error.h"
#include "model/model_shape.h"

namespace tinfer {

namespace {

using nlohmann::json;

// torch_dtype names -> the type-table name their weights are stored as.
struct TorchDtype {
  const char* torch;
  const char* type;
};
constexpr TorchDtype kTorchDtypes[] = {{"float16", "f16"}, {"bfloat16", "bf16"}, {"float32", "f32"}};

class Reader {
 public:
  Reader(const json& j, std::vector<std::string>& problems) : j_(j), problems_(problems) {}

  // A positive integer at `key`; `fallback` (0 = required) when absent or null.
  int64_t positive(const char* key, int64_t fallback = 0) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (fallback == 0) problems_.push_back(std::string("missing key '") + key + "'");
      return fallback;
    }
    if (!it->is_number_integer() || it->get<int64_t>() <= 0) {
      problems_.push_back(std::string("'") + key + "' must be a positive integer, got " + it->dump());
      return fallback;
    }
    return it->get<int64_t>();
  }
  bool boolean(const char* key, bool fallback) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) {
      problems_.push_back(std::string("'") + key + "' must be true or false, got " + it->dump());
      return fallback;
    }
    return it->get<bool>();
  }
  std::string string(const char* key) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return "";
    if (!it->is_string()) {
      problems_.push_back(std::string("'") + key + "' must be a string, got " + it->dump());
      return "";
    }
    return it->get<std::string>();
  }

 private:
  const json& j_;
  std::vector<std::string>& problems_;
};

}  // namespace

ModelShape model_shape_from_hf_config_text(const std::string& text, const std::string& label,
                                           const std::string& weight_type) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail(label + ": malformed JSON: " + e.what());
  }
  check(j.is_object(), label + ": a config.json is a JSON object, got " + std::string(j.type_name()));
  std::vector<std::string> problems;
  Reader r(j, problems);
  ModelShape s;
  ModelConfig& c = s.config;
  c.arch = "llama";
  c.name = r.string("_name_or_path");
  c.n_layers = r.positive("num_hidden_layers");
  c.n_heads = r.positive("num_attention_heads");
  c.dim = r.positive("hidden_size");
  c.ffn_dim = r.positive("intermediate_size");
  c.n_vocab = r.positive("vocab_size");
  c.n_kv_heads = r.positive("num_key_value_heads", c.n_heads > 0 ? c.n_heads : 1);  // absent: no GQA
  c.head_dim = r.positive("head_dim", c.n_heads > 0 && c.dim > 0 ? c.dim / c.n_heads : 1);
  c.rope_dim = c.head_dim;
  c.ctx_len = r.positive("max_position_embeddings", 2048);  // the GGUF reader's default too
  c.tied_output = r.boolean("tie_word_embeddings", false);
  // Qwen2 has q/k/v biases without saying so; Llama configs say attention_bias.
  const bool bias = r.boolean("attention_bias", r.string("model_type") == "qwen2");
  // transformers >= 4.56 writes "dtype" where older versions wrote "torch_dtype".
  std::string torch = r.string("torch_dtype");
  if (torch.empty()) torch = r.string("dtype");
  std::string stored = weight_type;
  if (stored.empty() && !torch.empty()) {
    for (const TorchDtype& t : kTorchDtypes)
      if (torch == t.torch) stored = t.type;
    if (stored.empty())
      problems.push_back("torch_dtype '" + torch + "' is not float16, bfloat16 or float32 (give --weight-type)");
  }
  if (!problems.empty()) {
    std::string msg = label + ": not a usable config.json:";
    for (const std::string& p : problems) msg += "\n  - " + p;
    fail(msg);
  }
  try {
    c.validate();
  } catch (const Error& e) {
    fail(label + ": " + e.what());
  }
  s.params = llama_param_count(c, c.tied_output, bias);
  s.weight_type = stored.empty() ? "f16" : stored;
  s.weight_bytes = weight_bytes_as(s.params, s.weight_type);
  s.source = "config.json " + label;
  return s;
}

ModelShape model_shape_from_hf_config(const std::string& path, const std::string& weight_type) {
  std::ifstream f(path);
  check(bool(f), "cannot open config file '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return model_shape_from_hf_config_text(ss.str(), path, weight_type);
}

}  // namespace tinfer

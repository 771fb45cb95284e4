// A Hugging Face checkpoint directory as a GgufFile view (see hf_checkpoint.h): the architecture table
// (hf_arch.h) names tensors and metadata, hf_tokenizer.h turns tokenizer.json into the tokenizer.ggml.* keys,
// and the safetensors mappings back the tensors; the few changed tensors live in owned buffers beside them.
#include "model/hf/hf_checkpoint.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tinfer/error.h"
#include "model/arch/arch.h"
#include "formats/gguf_meta.h"
#include "model/hf/hf_arch.h"
#include "model/rope.h"
#include "formats/safetensors.h"
#include "text/tokenizer/hf_tokenizer.h"
#include "quant/type_table.h"

namespace tinfer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// What the view's tensors point into; shared by the GgufFile.
struct Backing {
  SafetensorsCheckpoint shards;
  std::vector<std::vector<uint8_t>> owned;  // materialised tensors (permuted q/k, shifted norms, rope_freqs)
};

std::string read_text(const fs::path& p) {
  if (!fs::exists(p)) return "";
  std::ifstream f(p, std::ios::binary);
  check(bool(f), "cannot read '" + p.string() + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// llama.cpp's general.file_type of a checkpoint: the type holding most matrix elements.
uint32_t file_type_of(const std::vector<GgufTensor>& tensors) {
  std::map<DType, int64_t> by_type;
  for (const GgufTensor& t : tensors)
    if (t.shape.size() == 2) by_type[t.type] += t.elements();
  DType best = DType::F32;
  int64_t most = -1;
  for (const auto& [type, n] : by_type)
    if (n > most) best = type, most = n;
  return best == DType::F16 ? 1 : best == DType::BF16 ? 32 : 0;
}

void add_vocab_metadata(const HfVocab& v, GgufMetaList& m) {
  const VocabData& d = v.vocab;
  m.str("tokenizer.ggml.model", d.model);
  m.str("tokenizer.ggml.pre", d.pre);
  m.strs("tokenizer.ggml.tokens", d.tokens);
  if (!d.scores.empty()) m.f32s("tokenizer.ggml.scores", d.scores);
  m.i32s("tokenizer.ggml.token_type", d.types);
  if (!d.merges.empty()) m.strs("tokenizer.ggml.merges", d.merges);
  const std::pair<const char*, int32_t> ids[] = {
      {"bos_token_id", d.bos}, {"eos_token_id", d.eos}, {"unknown_token_id", d.unk}, {"padding_token_id", d.pad}};
  for (const auto& [key, id] : ids)
    if (id >= 0) m.u32(std::string("tokenizer.ggml.") + key, uint64_t(id));
  if (!d.eog_ids.empty()) m.i32s("tinfer.tokenizer.eog_token_ids", d.eog_ids);
  if (!d.normalizer.empty()) m.str("tinfer.tokenizer.normalizer", d.normalizer);
  m.boolean("tokenizer.ggml.add_bos_token", d.add_bos);
  if (d.model == "llama" || d.model == "t5") m.boolean("tokenizer.ggml.add_space_prefix", d.add_space_prefix);
  if (d.model == "t5") m.boolean("tokenizer.ggml.remove_extra_whitespaces", d.remove_extra_whitespaces);
  if (!d.precompiled_charsmap.empty()) m.u8s("tokenizer.ggml.precompiled_charsmap", d.precompiled_charsmap);
  if (!v.chat_template.empty()) m.str("tokenizer.chat_template", v.chat_template);
  for (const auto& [name, tmpl] : v.named_templates) m.str("tokenizer.chat_template." + name, tmpl);
}

int64_t hp_int(const json& hp, const char* key, int64_t fallback) {
  return hp.contains(key) && hp[key].is_number_integer() ? hp[key].get<int64_t>() : fallback;
}
double hp_num(const json& rs, const char* key, double fallback) {
  return rs.contains(key) && rs[key].is_number() ? rs[key].get<double>() : fallback;
}

// Llama 3 RoPE scaling as the rope_freqs.weight tensor llama.cpp's converter adds (its defaults: factor 8, low 1,
// high 4, original context 8192).
std::vector<float> llama3_factors(const json& hp, int64_t rope_dim) {
  const json& rs = hp["rope_scaling"];
  const double orig = hp_num(rs, "original_max_position_embeddings", double(hp_int(hp, "original_max_position_embeddings", 8192)));
  return llama3_rope_factors(hp_num(rs, "factor", 8.0), hp_num(rs, "low_freq_factor", 1.0), hp_num(rs, "high_freq_factor", 4.0),
                             orig, hp_num(hp, "rope_theta", 10000.0), rope_dim);
}

bool is_llama3_scaling(const json& hp) {
  if (!hp.contains("rope_scaling") || !hp["rope_scaling"].is_object()) return false;
  const json& r = hp["rope_scaling"];
  const std::string t = r.value("rope_type", r.value("type", ""));
  return t == "llama3";
}

// The RoPE factors llama.cpp's converter adds as tensors (which, the family's ArchFacts say): Llama 3's, and
// Phi-3's LongRoPE short and long ones (checked by phi3_extra).
void add_rope_factor_tensors(RopeFactorTensors kind, const json& hp, int64_t n_head, Backing& backing,
                             std::vector<GgufTensor>& tensors) {
  auto add_factors = [&](const char* name, const std::vector<float>& f) {
    auto& buf = backing.owned.emplace_back(f.size() * sizeof(float));
    std::memcpy(buf.data(), f.data(), buf.size());
    GgufTensor t;
    t.name = name;
    t.type = DType::F32;
    t.shape = {int64_t(f.size())};
    t.bytes = buf.size();
    t.data = buf.data();
    tensors.push_back(std::move(t));
  };
  if (kind == RopeFactorTensors::llama3 && is_llama3_scaling(hp)) {
    const int64_t rope_dim = hp_int(hp, "head_dim", hp_int(hp, "hidden_size", 0) / std::max<int64_t>(n_head, 1));
    add_factors("rope_freqs.weight", llama3_factors(hp, rope_dim));
  }
  if (kind == RopeFactorTensors::longrope && hp.contains("rope_scaling") && hp["rope_scaling"].is_object()) {
    const json& rs = hp["rope_scaling"];
    add_factors("rope_factors_short.weight", rs["short_factor"].get<std::vector<float>>());
    add_factors("rope_factors_long.weight", rs["long_factor"].get<std::vector<float>>());
  }
}

}  // namespace

void permute_qk_rows(const uint8_t* src, uint8_t* dst, int64_t n_head, int64_t head_dim, size_t row_bytes, bool inverse) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t i = 0; i < half; ++i) {
        const int64_t hf = h * head_dim + s * half + i, gg = h * head_dim + 2 * i + s;
        const int64_t from = inverse ? gg : hf, to = inverse ? hf : gg;
        std::memcpy(dst + size_t(to) * row_bytes, src + size_t(from) * row_bytes, row_bytes);
      }
}

GgufFile open_gguf_or_hf(const std::string& path) {
  return fs::is_directory(path) ? open_hf_checkpoint(path) : GgufFile::open(path);
}

bool is_hf_checkpoint_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / "config.json", ec);
}

GgufFile open_hf_checkpoint(const std::string& dir, const HfViewOptions& opts) {
  const fs::path root(dir);
  check(fs::is_directory(root), "'" + dir + "' is not a directory");
  check(fs::exists(root / "config.json"), "'" + dir + "' has no config.json (not a Hugging Face checkpoint)");
  json config;
  try {
    config = json::parse(read_text(root / "config.json"));
  } catch (const json::exception& e) {
    fail("'" + (root / "config.json").string() + "' is not valid JSON: " + e.what());
  }
  check(config.is_object() && config.contains("architectures") && config["architectures"].is_array() &&
            !config["architectures"].empty() && config["architectures"][0].is_string(),
        "config.json has no \"architectures\" list");
  const std::string hf_name = config["architectures"][0].get<std::string>();
  const HfArch* arch = find_hf_arch(hf_name);
  check(arch != nullptr, "unknown architecture '" + hf_name + "' in config.json (supported: " + known_hf_archs() + ")");
  const json hp = arch->text_config && config.contains("text_config") ? config["text_config"] : config;
  const std::string a = arch->gguf_arch;

  GgufMetaList meta;
  meta.str("general.architecture", a);
  meta.str("general.name", hp.value("_name_or_path", config.value("_name_or_path", root.filename().string())));
  hf_arch_metadata(*arch, hp, meta);
  if (arch->permute_qk && !opts.llama_cpp_layout) meta.str("tinfer.rope.layout", "neox");  // HF's rotate-half rows

  auto backing = std::make_shared<Backing>(Backing{SafetensorsCheckpoint::open_dir(dir), {}});
  const int64_t n_head = hp_int(hp, "num_attention_heads", 0), n_kv = hp_int(hp, "num_key_value_heads", n_head);
  std::vector<GgufTensor> tensors;
  for (const GgufTensor* src : backing->shards.tensors()) {
    const std::string name = map_hf_tensor_name(*arch, src->name);
    if (name.empty()) continue;
    GgufTensor t = *src;
    t.name = name;
    const bool is_q = name.ends_with("attn_q.weight") || name.ends_with("attn_q.bias");
    const bool is_k = name.ends_with("attn_k.weight") || name.ends_with("attn_k.bias");
    if (arch->permute_qk && opts.llama_cpp_layout && (is_q || is_k)) {
      const int64_t heads = is_q ? n_head : n_kv, rows = t.shape.back();
      check(heads > 0 && rows % heads == 0 && (rows / heads) % 2 == 0,
            "tensor '" + src->name + "' has " + std::to_string(rows) + " rows, not heads x an even head_dim");
      auto& buf = backing->owned.emplace_back(t.bytes);
      permute_qk_rows(t.data, buf.data(), heads, rows / heads, t.bytes / size_t(rows));
      t.data = buf.data();
    }
    if (arch->norm_shift != 0.0f && name.ends_with("norm.weight")) {  // (1 + w) RMSNorm: llama.cpp stores 1 + w, f32
      std::vector<float> w(size_t(t.elements()));
      type_traits(t.type).to_float(t.data, w.data(), t.elements());
      for (float& x : w) x += arch->norm_shift;
      auto& buf = backing->owned.emplace_back(w.size() * sizeof(float));
      std::memcpy(buf.data(), w.data(), buf.size());
      t.type = DType::F32, t.data = buf.data(), t.bytes = buf.size();
    }
    tensors.push_back(std::move(t));
  }
  add_rope_factor_tensors(find_arch(a)->facts.rope_factors, hp, n_head, *backing, tensors);  // (rows' archs are known)
  meta.u32("general.file_type", file_type_of(tensors));

  check(fs::exists(root / "tokenizer.json"), "'" + dir + "' has no tokenizer.json");
  HfTokenizerFiles files{read_text(root / "tokenizer.json"), read_text(root / "tokenizer_config.json"),
                         read_text(root / "generation_config.json"), config.dump()};
  if (arch->text_config && config.contains("text_config")) files.config = hp.dump();
  add_vocab_metadata(vocab_from_hf(files, hp_int(hp, "vocab_size", 0)), meta);
  return GgufFile::from_view(dir, meta.take(), std::move(tensors), std::move(backing));
}

}  // namespace tinfer

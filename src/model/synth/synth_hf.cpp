// Synthetic Hugging Face checkpoints (see synth_hf.h): the synthetic GGUF mapped back to HF names, config keys and
// tokenizer files.
#include "model/synth/synth_hf.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tinfer/error.h"
#include "model/arch/arch.h"
#include "formats/gguf.h"
#include "model/hf/hf_arch.h"
#include "model/hf/hf_checkpoint.h"
#include "model/rope.h"

namespace tinfer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    default: fail("safetensors holds F32, F16 or BF16 tensors only");
  }
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  check(bool(f), "cannot write '" + p.string() + "'");
}

// The Llama 3 scaling parameters behind the spec's factors (synth presets: low 1, high 4, original context 8192,
// factor = the largest divisor); Error when the factors are not of that form.
json llama3_scaling(const SynthSpec& s) {
  float factor = 1;
  for (float f : s.rope_freq_factors) factor = std::max(factor, f);
  const auto again = llama3_rope_factors(factor, 1.0, 4.0, 8192.0, s.rope_base, s.resolved_head_dim());
  check(again == s.rope_freq_factors, "synthetic rope factors are not Llama 3 scaling with low 1, high 4, context 8192");
  return {{"rope_type", "llama3"}, {"factor", factor}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
          {"original_max_position_embeddings", 8192}};
}

json config_json(const SynthSpec& s, const HfArch& arch) {
  static const std::pair<DType, const char*> kTorch[] = {{DType::F32, "float32"}, {DType::F16, "float16"}, {DType::BF16, "bfloat16"}};
  json c = {{"architectures", {arch.hf_name}},
            {"_name_or_path", s.name},
            {"hidden_size", s.dim},
            {"intermediate_size", s.ffn_dim},
            {"num_hidden_layers", s.n_layers},
            {"num_attention_heads", s.n_heads},
            {"num_key_value_heads", s.n_kv_heads},
            {"max_position_embeddings", s.ctx_len},
            {"rms_norm_eps", double(s.rms_eps)},
            {"rope_theta", double(s.rope_base)},
            {"vocab_size", s.n_vocab},
            {"tie_word_embeddings", s.tied_embeddings},
            {"bos_token_id", 1},
            {"eos_token_id", 2}};
  for (const auto& [t, name] : kTorch)
    if (t == s.weight_type) c["torch_dtype"] = name;
  if (s.head_dim > 0) c["head_dim"] = s.head_dim;
  if (!s.rope_freq_factors.empty() && s.rope_factors_long.empty()) c["rope_scaling"] = llama3_scaling(s);
  if (arch.write_config) arch.write_config({s.ctx_len, s.sliding_window, s.resolved_head_dim()}, c);
  if (!s.rope_factors_long.empty()) {  // phi3 LongRoPE
    c["original_max_position_embeddings"] = s.rope_orig_ctx;
    c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", s.rope_freq_factors}, {"long_factor", s.rope_factors_long}};
  }
  return c;
}

// The synthetic SentencePiece vocabulary as a tokenizer.json BPE: every multi-character normal piece is reached by one
// merge (its prefix + its last character, both in the vocabulary by construction), ranked in id order, which is the
// synthetic scores' order.
json tokenizer_json(const SynthSpec& s) {
  const SynthVocab v = synth_vocab(s.n_vocab);
  json vocab = json::object(), merges = json::array(), added = json::array();
  std::map<std::string, int> have;
  for (size_t i = 0; i < v.pieces.size(); ++i) have[v.pieces[i]] = int(i);
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    const std::string& p = v.pieces[i];
    vocab[p] = i;
    if (v.types[i] == 3 || v.types[i] == 2)
      added.push_back({{"id", i}, {"content", p}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", false}, {"special", true}});
    if (v.types[i] != 1) continue;
    size_t last = p.size() - 1;  // start of the last UTF-8 character
    while (last > 0 && (uint8_t(p[last]) & 0xC0) == 0x80) --last;
    if (last == 0) continue;
    const std::string left = p.substr(0, last), right = p.substr(last);
    if (have.count(left) && have.count(right)) merges.push_back({left, right});
  }
  const json space = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}}, space}}}},
          {"pre_tokenizer", nullptr},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair", {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
          {"decoder",
           {{"type", "Sequence"},
            {"decoders",
             {{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
              {{"type", "ByteFallback"}},
              {{"type", "Fuse"}},
              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
          {"model",
           {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", "<unk>"}, {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr}, {"fuse_unk", true}, {"byte_fallback", true}, {"ignore_merges", false},
            {"vocab", vocab}, {"merges", merges}}}};
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors) {
  json h = {{"__metadata__", {{"format", "pt"}}}};
  size_t off = 0;
  for (const SafetensorsEntry& t : tensors) {
    std::vector<int64_t> shape(t.gguf_shape.rbegin(), t.gguf_shape.rend());
    h[t.name] = {{"dtype", dtype_name(t.type)}, {"shape", shape}, {"data_offsets", {off, off + t.bytes}}};
    off += t.bytes;
  }
  std::string hs = h.dump();
  hs.resize((hs.size() + 7) / 8 * 8, ' ');  // 8-byte aligned data, as the reference writer pads
  std::ofstream f(path, std::ios::binary);
  const uint64_t n = hs.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = char(n >> (8 * i));
  f.write(len, 8);
  f.write(hs.data(), std::streamsize(hs.size()));
  for (const SafetensorsEntry& t : tensors) f.write(reinterpret_cast<const char*>(t.data), std::streamsize(t.bytes));
  check(bool(f), "cannot write '" + path + "'");
}

void synthesize_hf_checkpoint(const SynthSpec& spec, const std::string& dir, const HfSynthOptions& opts) {
  check(spec.weight_type == DType::F32 || spec.weight_type == DType::F16 || spec.weight_type == DType::BF16,
        "a synthetic Hugging Face checkpoint holds f32, f16 or bf16 weights");
  check(opts.shards >= 1 && opts.shards <= 99, "shards must be in [1, 99]");
  const HfArch* found = find_hf_arch_for_gguf(spec.arch);
  const ArchSpec* gguf_arch = find_arch(spec.arch);
  check(found != nullptr && gguf_arch != nullptr, "no Hugging Face architecture for synthetic arch '" + spec.arch + "'");
  const HfArch& arch = *found;
  const std::vector<uint8_t> bytes = synthesize_model_bytes(spec);
  const GgufFile g = GgufFile::from_bytes(bytes.data(), bytes.size());
  fs::create_directories(dir);

  // Tensors in HF form; interleaved q/k rows the converter permutes go back to rotate-half (a neox-layout spec's are).
  const bool unpermute = arch.permute_qk && spec.rope_layout == RopeLayout::interleaved;
  std::vector<std::vector<uint8_t>> owned;
  std::vector<SafetensorsEntry> all;
  for (const GgufTensor& t : g.tensors()) {
    if (t.name.starts_with("rope_f")) continue;  // rope_freqs / rope_factors_*: config.json's rope_scaling says it
    SafetensorsEntry e{hf_tensor_name(arch, t.name, gguf_arch->facts.fused), t.type, t.shape, t.data, t.bytes};
    const bool qk = t.name.ends_with("attn_q.weight") || t.name.ends_with("attn_k.weight");
    if (arch.norm_shift != 0.0f && t.name.ends_with("norm.weight")) {  // Gemma checkpoints store w of (1 + w)
      auto& buf = owned.emplace_back(t.bytes);
      const auto* src = reinterpret_cast<const float*>(t.data);
      auto* dst = reinterpret_cast<float*>(buf.data());
      for (size_t i = 0; i < t.bytes / sizeof(float); ++i) dst[i] = src[i] - arch.norm_shift;
      e.data = buf.data();
    }
    if (unpermute && qk) {
      const int64_t heads = t.name.ends_with("attn_q.weight") ? spec.n_heads : spec.n_kv_heads;
      auto& buf = owned.emplace_back(t.bytes);
      permute_qk_rows(t.data, buf.data(), heads, spec.resolved_head_dim(), t.bytes / size_t(t.shape[1]), true);
      e.data = buf.data();
    }
    all.push_back(e);
  }
  json weight_map = json::object();
  const size_t per = (all.size() + size_t(opts.shards) - 1) / size_t(opts.shards);
  size_t total = 0;
  for (int s = 0; s < opts.shards; ++s) {
    const size_t b = std::min(all.size(), per * size_t(s)), e = std::min(all.size(), b + per);
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, opts.shards);
    const std::string file = opts.shards == 1 ? "model.safetensors" : name;
    std::vector<SafetensorsEntry> part(all.begin() + std::ptrdiff_t(b), all.begin() + std::ptrdiff_t(e));
    write_safetensors((fs::path(dir) / file).string(), part);
    for (const auto& t : part) weight_map[t.name] = file, total += t.bytes;
  }
  if (opts.shards > 1)
    write_text(fs::path(dir) / "model.safetensors.index.json",
               json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}.dump(2));
  write_text(fs::path(dir) / "config.json", config_json(spec, arch).dump(2));
  write_text(fs::path(dir) / "tokenizer.json", tokenizer_json(spec).dump());
  write_text(fs::path(dir) / "tokenizer_config.json",
             json{{"add_bos_token", true}, {"add_eos_token", false}, {"bos_token", "<s>"}, {"eos_token", "</s>"},
                  {"unk_token", "<unk>"}, {"tokenizer_class", "LlamaTokenizer"}}
                 .dump(2));
}

}  // namespace tinfer

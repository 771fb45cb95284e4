// The per-architecture table of Hugging Face checkpoints (see hf_arch.h). Facts from llama.cpp's converter: the
// tensor names of gguf-py's tensor map, the keys each model class's set_gguf_parameters writes and its defaults.
#include "model/hf/hf_arch.h"

#include <algorithm>
#include <cmath>

#include "tinfer/error.h"

namespace tinfer {

using nlohmann::json;

namespace {

// Tensors outside the layers, common to every family here.
constexpr HfNamePair kTopNames[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

// Llama-style blocks (llama, mistral, qwen2, qwen3, phi3): one norm before attention, one before the MLP.
constexpr HfNamePair kLlamaLayer[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.qkv_proj.weight", "attn_qkv.weight"},  // phi3: rows q | k | v
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},  // qwen3
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.gate_up_proj.weight", "ffn_up.weight"},  // phi3: rows gate | up
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

// Gemma 3 blocks: norms before and after both attention and MLP; HF's post_attention_layernorm is the norm
// *after* attention here (llama.cpp: post_attention_norm), the MLP's input norm is pre_feedforward_layernorm.
constexpr HfNamePair kGemma3Layer[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

// TextModel.set_gguf_parameters (llama, qwen2, qwen3): only what config.json holds.
constexpr HfConfigKey kCommonKeys[] = {
    {"num_hidden_layers", "block_count", false, kRequired},
    {"max_position_embeddings", "context_length", false, kOmit},
    {"hidden_size", "embedding_length", false, kRequired},
    {"intermediate_size", "feed_forward_length", false, kOmit},
    {"num_attention_heads", "attention.head_count", false, kRequired},
    {"num_key_value_heads", "attention.head_count_kv", false, kOmit},
    {"rope_theta", "rope.freq_base", true, kOmit},
    {"rms_norm_eps", "attention.layer_norm_rms_epsilon", true, kOmit},
    {"head_dim", "attention.key_length", false, kOmit},
    {"head_dim", "attention.value_length", false, kOmit},
};

// Phi3MiniModel.set_gguf_parameters: its own list (no key_length), rms_norm_eps required.
constexpr HfConfigKey kPhi3Keys[] = {
    {"max_position_embeddings", "context_length", false, kRequired},
    {"original_max_position_embeddings", "rope.scaling.original_context_length", false, kRequired},
    {"hidden_size", "embedding_length", false, kRequired},
    {"intermediate_size", "feed_forward_length", false, kRequired},
    {"num_hidden_layers", "block_count", false, kRequired},
    {"num_attention_heads", "attention.head_count", false, kRequired},
    {"num_key_value_heads", "attention.head_count_kv", false, kRequired},
    {"rms_norm_eps", "attention.layer_norm_rms_epsilon", true, kRequired},
    {"rope_theta", "rope.freq_base", true, 10000.0},
};

// Gemma3Model.set_gguf_parameters with its defaults for keys config.json may leave out.
constexpr HfConfigKey kGemma3Keys[] = {
    {"max_position_embeddings", "context_length", false, 131072},
    {"hidden_size", "embedding_length", false, kRequired},
    {"num_hidden_layers", "block_count", false, kRequired},
    {"intermediate_size", "feed_forward_length", false, kRequired},
    {"num_attention_heads", "attention.head_count", false, 8},
    {"rms_norm_eps", "attention.layer_norm_rms_epsilon", true, 1e-6},
    {"head_dim", "attention.key_length", false, 256},
    {"head_dim", "attention.value_length", false, 256},
    {"rope_theta", "rope.freq_base", true, 1000000.0},  // global layers; local ones use 10000 in llama.cpp
    {"sliding_window", "attention.sliding_window", false, kRequired},
    {"num_key_value_heads", "attention.head_count_kv", false, 4},
};

bool has(const json& hp, const char* key) { return hp.contains(key) && !hp[key].is_null(); }

int64_t int_of(const json& hp, const char* key) {
  check(has(hp, key) && hp[key].is_number_integer(), std::string("config.json: '") + key + "' must be an integer");
  return hp[key].get<int64_t>();
}

std::string rope_type(const json& hp) {
  if (!has(hp, "rope_scaling")) return "";
  const json& r = hp["rope_scaling"];
  check(r.is_object(), "config.json: 'rope_scaling' must be an object");
  for (const char* k : {"rope_type", "type"})
    if (r.contains(k) && r[k].is_string()) return r[k].get<std::string>();
  return "";
}

void linear_rope_scaling(const json& hp, const std::string& arch, GgufMetaList& out) {
  const json& r = hp["rope_scaling"];
  check(r.contains("factor") && r["factor"].is_number(), "config.json: linear rope_scaling needs a numeric 'factor'");
  out.str(arch + ".rope.scaling.type", "linear");
  out.f32(arch + ".rope.scaling.factor", r["factor"].get<double>());
}

int64_t head_dim_of(const json& hp) {
  return has(hp, "head_dim") ? int_of(hp, "head_dim") : int_of(hp, "hidden_size") / int_of(hp, "num_attention_heads");
}

// LlamaModel: vocab_size, rope dimension = head_dim, linear scaling as keys (llama3 scaling becomes the
// rope_freqs.weight tensor, hf_checkpoint.cpp), Mistral's sliding window.
void llama_extra(const json& hp, const std::string& arch, GgufMetaList& out) {
  out.u32(arch + ".vocab_size", uint64_t(int_of(hp, "vocab_size")));
  out.u32(arch + ".rope.dimension_count", uint64_t(head_dim_of(hp)));
  const std::string rt = rope_type(hp);
  if (rt == "linear") linear_rope_scaling(hp, arch, out);
  check(rt.empty() || rt == "linear" || rt == "llama3" || rt == "default",
        "config.json: rope_scaling type '" + rt + "' is not supported (linear, llama3)");
  if (has(hp, "sliding_window")) out.u32(arch + ".attention.sliding_window", uint64_t(int_of(hp, "sliding_window")));
}

void qwen_extra(const json& hp, const std::string&, GgufMetaList&) {
  const std::string rt = rope_type(hp);
  check(rt.empty() || rt == "default", "config.json: rope_scaling type '" + rt + "' is not supported for Qwen yet");
  check(!(hp.contains("use_sliding_window") && hp["use_sliding_window"].is_boolean() &&
          hp["use_sliding_window"].get<bool>()),
        "config.json: use_sliding_window = true is not supported for Qwen yet");
}

void phi3_extra(const json& hp, const std::string& arch, GgufMetaList& out) {
  const double rot = has(hp, "partial_rotary_factor") ? hp["partial_rotary_factor"].get<double>() : 1.0;
  out.u32(arch + ".rope.dimension_count",
          uint64_t(int64_t(rot * double(int_of(hp, "hidden_size"))) / int_of(hp, "num_attention_heads")));
  // LongRoPE ("longrope", formerly "su"): the short/long factor tensors (hf_checkpoint.cpp), the original context and
  // the attention factor sqrt(1 + ln(scale) / ln(original)) llama.cpp's converter computes.
  if (has(hp, "rope_scaling")) {
    const json& rs = hp["rope_scaling"];
    const std::string t = rope_type(hp);
    check(t == "longrope" || t == "su", "phi3: rope_scaling type '" + t + "' is not supported (longrope)");
    const int64_t rope_dim = int64_t(rot * double(int_of(hp, "hidden_size"))) / int_of(hp, "num_attention_heads");
    for (const char* k : {"short_factor", "long_factor"})
      check(rs.contains(k) && rs[k].is_array() && int64_t(rs[k].size()) == rope_dim / 2 &&
                std::all_of(rs[k].begin(), rs[k].end(), [](const json& v) { return v.is_number(); }),
            std::string("phi3: rope_scaling.") + k + " must hold rope dimension / 2 = " + std::to_string(rope_dim / 2) +
                " numbers");
    const int64_t orig = int_of(hp, "original_max_position_embeddings");  // (kPhi3Keys writes its key)
    const double scale = double(int_of(hp, "max_position_embeddings")) / double(orig);
    out.f32(arch + ".rope.scaling.attn_factor", scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(double(orig))) : 1.0);
  }
  out.u32(arch + ".attention.sliding_window", has(hp, "sliding_window") ? uint64_t(int_of(hp, "sliding_window")) : 0);
}

// Gemma 3: the local layers' RoPE base and the local/global pattern, under the keys the gemma3 reader takes (llama.cpp
// hard-codes 10000 and 6: a file of a checkpoint that differs from them would run wrong there, and is refused here
// unless the pattern can be written); soft-capping (Gemma 2) refused.
void gemma3_extra(const json& hp, const std::string& arch, GgufMetaList& out) {
  const std::string rt = rope_type(hp);
  if (rt == "linear") linear_rope_scaling(hp, arch, out);  // global layers only
  check(rt.empty() || rt == "linear" || rt == "default", "config.json: gemma3 rope_scaling type '" + rt + "' is not linear");
  if (has(hp, "rope_local_base_freq")) out.f32(arch + ".rope.freq_base_swa", hp["rope_local_base_freq"].get<double>());
  int64_t pattern = has(hp, "sliding_window_pattern") ? int_of(hp, "sliding_window_pattern") : 6;
  if (has(hp, "layer_types")) {  // newer configs list each layer: every pattern-th is "full_attention"
    const json& lt = hp["layer_types"];
    check(lt.is_array() && !lt.empty(), "config.json: layer_types must be a list");
    pattern = 0;
    for (size_t i = 0; i < lt.size() && pattern == 0; ++i)
      if (lt[i] == "full_attention") pattern = int64_t(i) + 1;
    if (pattern == 0) pattern = int64_t(lt.size()) + 1;  // no global layer in the list
    for (size_t i = 0; i < lt.size(); ++i)
      check(lt[i] == ((int64_t(i) + 1) % pattern == 0 ? "full_attention" : "sliding_attention"),
            "config.json: layer_types is not one global layer every " + std::to_string(pattern) + " layers");
  }
  check(pattern >= 1, "config.json: sliding_window_pattern must be >= 1");
  out.u32(arch + ".attention.sliding_window_pattern", uint64_t(pattern));
  for (const char* cap : {"final_logit_softcapping", "attn_logit_softcapping"})
    check(!has(hp, cap), std::string("config.json: gemma3 with ") + cap + " (Gemma 2's soft-capping) is not supported");
  if (has(hp, "query_pre_attn_scalar")) {
    const int64_t q = int_of(hp, "query_pre_attn_scalar"), hd = head_dim_of(hp);
    const int64_t per_head = int_of(hp, "hidden_size") / int_of(hp, "num_attention_heads");
    const bool is_27b = int_of(hp, "num_hidden_layers") == 62;  // the reader's rule (arch/gemma3.cpp)
    check(q == (is_27b ? per_head : hd), "config.json: query_pre_attn_scalar " + std::to_string(q) +
                                             " is not what the gemma3 reader applies (" +
                                             std::to_string(is_27b ? per_head : hd) + ")");
  }
}

// The inverses, for synthetic checkpoints: the config.json keys the readers above turn back into the model's values.
void llama_write(const HfConfigValues& v, json& c) {
  if (v.sliding_window > 0) c["sliding_window"] = v.sliding_window;
}

void phi3_write(const HfConfigValues& v, json& c) {
  c["original_max_position_embeddings"] = v.ctx_len;  // (LongRoPE overwrites it with its original context)
  c["sliding_window"] = v.sliding_window > 0 ? json(v.sliding_window) : json(nullptr);
}

void gemma3_write(const HfConfigValues& v, json& c) {
  c["sliding_window"] = v.sliding_window;
  c["sliding_window_pattern"] = 6;
  c["rope_local_base_freq"] = 10000.0;
  c["query_pre_attn_scalar"] = v.head_dim;
  c["hidden_activation"] = "gelu_pytorch_tanh";
  c["head_dim"] = v.head_dim;
}

// The first row of each GGUF architecture is the one synthetic checkpoints are written as.
constexpr HfArch kArchs[] = {
    {"LlamaForCausalLM", "llama", kLlamaLayer, kCommonKeys, llama_extra, llama_write, true, 0.0f, false},
    {"MistralForCausalLM", "llama", kLlamaLayer, kCommonKeys, llama_extra, llama_write, true, 0.0f, false},
    {"Qwen2ForCausalLM", "qwen2", kLlamaLayer, kCommonKeys, qwen_extra, nullptr, false, 0.0f, false},
    {"Qwen3ForCausalLM", "qwen3", kLlamaLayer, kCommonKeys, qwen_extra, nullptr, false, 0.0f, false},
    {"Phi3ForCausalLM", "phi3", kLlamaLayer, kPhi3Keys, phi3_extra, phi3_write, false, 0.0f, false},
    {"Gemma3ForCausalLM", "gemma3", kGemma3Layer, kGemma3Keys, gemma3_extra, gemma3_write, false, 1.0f, false},
    {"Gemma3ForConditionalGeneration", "gemma3", kGemma3Layer, kGemma3Keys, gemma3_extra, gemma3_write, false, 1.0f,
     true},
};

// Multimodal wrappers: the language model's tensors carry this infix, the rest is dropped.
constexpr const char* kDroppedPrefixes[] = {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                                            "model.multi_modal_projector.", "vision_model.", "model.vision_model."};

}  // namespace

const HfArch* find_hf_arch(const std::string& hf_name) {
  for (const HfArch& a : kArchs)
    if (hf_name == a.hf_name) return &a;
  return nullptr;
}

const HfArch* find_hf_arch_for_gguf(const std::string& gguf_arch) {
  for (const HfArch& a : kArchs)
    if (gguf_arch == a.gguf_arch) return &a;
  return nullptr;
}

std::string known_hf_archs() {
  std::string s;
  for (const HfArch& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.hf_name);
  return s;
}

std::string map_hf_tensor_name(const HfArch& arch, const std::string& hf_name) {
  std::string name = hf_name;
  for (const char* p : kDroppedPrefixes)
    if (name.rfind(p, 0) == 0) return "";
  if (name.ends_with("rotary_emb.inv_freq")) return "";  // recomputed from rope_theta
  if (auto at = name.find("language_model."); at != std::string::npos) name.erase(at, 15);
  for (const HfNamePair& p : kTopNames)
    if (name == p.hf) return p.gguf;
  constexpr std::string_view kLayers = "model.layers.";
  if (name.rfind(kLayers, 0) == 0) {
    const size_t dot = name.find('.', kLayers.size());
    const std::string n = name.substr(kLayers.size(), dot == std::string::npos ? 0 : dot - kLayers.size());
    const bool numeric = !n.empty() && n.size() < 7 && n.find_first_not_of("0123456789") == std::string::npos;
    if (numeric) {
      const std::string part = name.substr(dot + 1);
      for (const HfNamePair& p : arch.layer_names)
        if (part == p.hf) return "blk." + n + "." + p.gguf;
    }
  }
  fail(std::string(arch.hf_name) + ": cannot map tensor '" + hf_name + "' to a GGUF name");
}

std::string hf_tensor_name(const HfArch& arch, const std::string& gguf_name, bool fused) {
  for (const HfNamePair& p : kTopNames)
    if (gguf_name == p.gguf) return p.hf;
  if (gguf_name.rfind("blk.", 0) == 0) {
    const size_t dot = gguf_name.find('.', 4);
    const std::string n = gguf_name.substr(4, dot - 4), part = gguf_name.substr(dot + 1);
    for (const HfNamePair& p : arch.layer_names) {
      const bool fused_name = std::string_view(p.hf).find("gate_up") != std::string_view::npos;
      if (part == p.gguf && (part != "ffn_up.weight" || fused_name == fused)) return "model.layers." + n + "." + p.hf;
    }
  }
  fail(std::string(arch.hf_name) + ": no Hugging Face name for tensor '" + gguf_name + "'");
}

void hf_arch_metadata(const HfArch& arch, const json& hp, GgufMetaList& out) {
  const std::string p = std::string(arch.gguf_arch) + ".";
  std::string missing;
  for (const HfConfigKey& k : arch.config_keys) {
    double v = k.fallback;
    if (has(hp, k.hf)) {
      check(hp[k.hf].is_number(), std::string("config.json: '") + k.hf + "' must be a number, got " + hp[k.hf].dump());
      check(k.is_float || hp[k.hf].is_number_integer(), std::string("config.json: '") + k.hf + "' must be an integer");
      v = hp[k.hf].get<double>();
    }
    if (v == kOmit) continue;
    if (v == kRequired) {
      missing += (missing.empty() ? "'" : ", '") + std::string(k.hf) + "'";
      continue;
    }
    if (k.is_float) out.f32(p + k.gguf, v);
    else out.u32(p + k.gguf, uint64_t(std::llround(v)));
  }
  check(missing.empty(), std::string("config.json (") + arch.hf_name + ") is missing " + missing);
  arch.extra_config(hp, arch.gguf_arch, out);
}

}  // namespace tinfer

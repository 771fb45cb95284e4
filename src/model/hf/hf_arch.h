// The table behind Hugging Face checkpoints: per config.json `architectures[0]`, the GGUF architecture, how tensor
// names map (HF `model.layers.N.<part>` -> `blk.N.<part>`), which config.json keys become which `<arch>.` metadata
// keys (names as llama.cpp's convert_hf_to_gguf.py writes them, with its defaults), and the few tensor changes
// llama.cpp's converter makes (llama q/k row permutation, Gemma's (1 + w) norms).
#pragma once
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "formats/gguf_meta.h"

namespace tinfer {

struct HfNamePair {
  const char* hf;    // within model.layers.N. (or the whole name for the non-layer tensors)
  const char* gguf;  // within blk.N.
};

// One config.json key -> one metadata key under "<arch>.". fallback: used when the key is absent or null;
// kRequired refuses the checkpoint, kOmit writes nothing.
struct HfConfigKey {
  const char* hf;
  const char* gguf;
  bool is_float;
  double fallback;
};
inline constexpr double kRequired = -1e300, kOmit = -2e300;

// The values of a model that a family's own config.json keys are written from (synthetic checkpoints).
struct HfConfigValues {
  int64_t ctx_len, sliding_window, head_dim;
};

struct HfArch {
  const char* hf_name;    // "LlamaForCausalLM"
  const char* gguf_arch;  // "llama"
  std::span<const HfNamePair> layer_names;
  std::span<const HfConfigKey> config_keys;
  // Arch-specific keys computed from several config values (rope dimensions, scaling, sliding window); Error on
  // what the runtime cannot run (e.g. LongRoPE).
  void (*extra_config)(const nlohmann::json& hp, const std::string& arch, GgufMetaList& out);
  // Its inverse for synthetic checkpoints (model/synth/synth_hf.cpp): the family's own config.json keys; nullptr: none.
  void (*write_config)(const HfConfigValues& v, nlohmann::json& config);
  bool permute_qk;   // llama.cpp's converter permutes q/k rows (llama family only)
  float norm_shift;  // added to every "*norm.weight" (Gemma stores w for a (1 + w) RMSNorm)
  bool text_config;  // hyper-parameters under config.json's "text_config" (multimodal wrappers)
};

// nullptr if unknown.
const HfArch* find_hf_arch(const std::string& hf_name);
std::string known_hf_archs();  // "LlamaForCausalLM, MistralForCausalLM, ..."
// The checkpoint class a GGUF architecture is written as (its first row: the plain causal LM); nullptr if none.
const HfArch* find_hf_arch_for_gguf(const std::string& gguf_arch);

// HF tensor name -> GGUF name; "" for tensors the converter drops (rotary inv_freq, vision tower and projector of
// multimodal wrappers); Error naming the tensor when the table has no row for it.
std::string map_hf_tensor_name(const HfArch& arch, const std::string& hf_name);

// The inverse (writing synthetic checkpoints): GGUF name -> HF name; fused picks phi3's fused names
// (self_attn.qkv_proj, mlp.gate_up_proj) where two HF names map to one GGUF name. Error when there is none.
std::string hf_tensor_name(const HfArch& arch, const std::string& gguf_name, bool fused);

// The <arch>.* metadata from the hyper-parameters (config.json, or its text_config). Error listing every missing
// required key.
void hf_arch_metadata(const HfArch& arch, const nlohmann::json& hp, GgufMetaList& out);

}  // namespace tinfer

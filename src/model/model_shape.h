// ModelShape: what sizing a model's memory needs, without its weights — the validated configuration
// (layers, heads, kv heads, head_dim, ...), the parameter count and the weights' bytes. Three sources:
// a GGUF file's metadata and tensor table (nothing is packed or read beyond the header), a built-in table
// of well-known shapes (`tinfer kv-plan --like`), or a Hugging Face config.json.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "model/model_config.h"

namespace tinfer {

struct ModelShape {
  ModelConfig config;
  int64_t params = 0;               // every weight element (GGUF: sum over tensors; else the table or the shapes)
  int64_t weight_bytes = 0;         // GGUF: sum of tensor bytes as stored; else params x bytes of weight_type
  bool weight_bytes_exact = false;  // true for GGUF (stored bytes); an estimate from params otherwise
  std::string weight_type;          // "f16", "q4_1", "q4_1 + f32" (GGUF: types by bytes, most first)
  std::string source;               // "GGUF file X", "built-in shape llama-2-7b", "config.json X"
};

// One row of the built-in table: the published shapes of a well-known checkpoint.
struct KnownModel {
  const char* name;  // "llama-2-7b" (what --like takes)
  int64_t layers, heads, kv_heads, head_dim, hidden, ffn, vocab, ctx;
  bool tied_embeddings;
  bool attn_bias;  // q/k/v projections carry biases (Qwen2)
  int64_t params;  // the checkpoint's parameter count
  int64_t sliding_window = 0;  // every layer attends to the last this many positions (Mistral); 0: none
};

std::span<const KnownModel> known_models();
// "tinyllama-1.1b, llama-2-7b, ..." for messages and --help.
std::string known_model_names();

// Parameters of a Llama-family decoder from its shapes: token embedding, the output head unless tied, per layer
// q/k/v/o and gate/up/down projections, two RMSNorm vectors and (attn_bias) the q/k/v biases, the final norm.
int64_t llama_param_count(const ModelConfig& c, bool tied_embeddings, bool attn_bias);

// params stored as `type` ("f32", "f16", "bf16", or a GGUF quant type "q8_0", "q4_k", ...: its bytes per
// block over its elements per block, rounded up); Error naming the known types otherwise.
int64_t weight_bytes_as(int64_t params, const std::string& type);

// From the file's metadata and tensor table only; Error for a missing file, a file that is not GGUF, an
// unknown architecture or an inconsistent configuration.
ModelShape model_shape_from_gguf(const std::string& path);
// The table row `name` (case-insensitive); weights as weight_type (empty: f16). Error listing the known names.
ModelShape model_shape_like(const std::string& name, const std::string& weight_type);
// A Hugging Face config.json (num_hidden_layers, num_attention_heads, num_key_value_heads, hidden_size,
// head_dim, intermediate_size, vocab_size, max_position_embeddings, torch_dtype, tie_word_embeddings,
// attention_bias); weights as weight_type (empty: torch_dtype, else f16). Error naming the file and every
// missing or malformed key.
ModelShape model_shape_from_hf_config(const std::string& path, const std::string& weight_type);
// The same from the file's text; `label` names it in messages.
ModelShape model_shape_from_hf_config_text(const std::string& json, const std::string& label,
                                           const std::string& weight_type);

}  // namespace tinfer

// Architecture interface: each architecture is one file that knows its metadata keys and tensor
// names and states its ArchFacts, plus one line in the registry. The forward passes consume the generic
// structures below; the synthetic models and the Hugging Face conversion read the facts (plus, for checkpoints,
// the family's row in model/hf/hf_arch.cpp), so a new family needs no branch in either.
#pragma once
#include <string>
#include <vector>

#include "model/model_config.h"

namespace tinfer {

class GgufFile;
struct GgufTensor;

// One decoder block's tensors, GGUF shapes in comments (shape[0] = row length = input features).
struct LayerTensors {
  const GgufTensor* attn_norm = nullptr;  // [dim]
  const GgufTensor* wq = nullptr;         // [dim, n_heads*head_dim]
  const GgufTensor* wk = nullptr;         // [dim, n_kv_heads*head_dim]
  const GgufTensor* wv = nullptr;         // [dim, n_kv_heads*head_dim]
  const GgufTensor* wo = nullptr;         // [n_heads*head_dim, dim]
  const GgufTensor* ffn_norm = nullptr;   // [dim]
  const GgufTensor* w_gate = nullptr;     // [dim, ffn]
  const GgufTensor* w_up = nullptr;       // [dim, ffn]
  const GgufTensor* w_down = nullptr;     // [ffn, dim]
  // Optional parts of other families (nullptr when the architecture has none):
  const GgufTensor* bq = nullptr;         // [n_heads*head_dim]     qwen2: biases of the Q, K, V projections
  const GgufTensor* bk = nullptr;         // [n_kv_heads*head_dim]
  const GgufTensor* bv = nullptr;         // [n_kv_heads*head_dim]
  const GgufTensor* q_norm = nullptr;     // [head_dim]             qwen3: RMSNorm of each q and k head before RoPE
  const GgufTensor* k_norm = nullptr;     // [head_dim]
  // phi3: one fused tensor instead of wq/wk/wv ([dim, q_dim + 2 kv_dim], rows q | k | v) and of w_gate/w_up
  // ([dim, 2 ffn], rows gate | up); the separate pointers are then nullptr.
  const GgufTensor* wqkv = nullptr;
  const GgufTensor* w_gateup = nullptr;
  // gemma3: RMSNorms of each block's output before it joins the residual stream ([dim]).
  const GgufTensor* post_attn_norm = nullptr;
  const GgufTensor* post_ffn_norm = nullptr;
  const GgufTensor& first_matrix() const { return wq ? *wq : *wqkv; }  // (its type stands for the layer's)
};

struct DecoderTensors {
  const GgufTensor* tok_embd = nullptr;     // [dim, vocab]
  const GgufTensor* output_norm = nullptr;  // [dim]
  const GgufTensor* output = nullptr;       // [dim, vocab]; == tok_embd when tied
  std::vector<LayerTensors> layers;
};

// Which RoPE factor tensors a family's files carry (llama.cpp's converter writes them from config.json's rope_scaling).
enum class RopeFactorTensors {
  none,
  llama3,     // rope_freqs.weight: Llama 3's per-frequency divisors
  longrope,   // rope_factors_short/long.weight + <arch>.rope.scaling.original_context_length / attn_factor (Phi-3)
};

// What a family's file holds beyond the Llama block, as data: the synthetic models (model/synth*.cpp) and the Hugging
// Face conversion read these, so neither tests an architecture's name. bind_tensors is their reader side.
struct ArchFacts {
  bool fused = false;             // attn_qkv (rows q | k | v) and ffn_up (rows gate | up) instead of q, k, v, gate, up
  bool qkv_bias = false;          // attn_q/k/v.bias
  bool qk_norm = false;           // attn_q_norm / attn_k_norm [head_dim]: RMSNorm of each q and k head before RoPE
  bool post_norms = false;        // post_attention_norm / post_ffw_norm [dim]: RMSNorm of each block's output
  bool interleaved_rope = false;  // GGUF q/k rows rotate interleaved pairs (tinfer.rope.layout may say neox); else neox
  bool sliding_window = false;    // reads <arch>.attention.sliding_window
  bool tied_head = false;         // the head is always the embedding (no output.weight)
  RopeFactorTensors rope_factors = RopeFactorTensors::none;
};

struct ArchSpec {
  const char* name;
  ModelConfig (*read_config)(const GgufFile& file);
  DecoderTensors (*bind_tensors)(const GgufFile& file, const ModelConfig& cfg);  // validates shapes
  ArchFacts facts;
};

// The registry: nullptr if `name` is not a known architecture.
const ArchSpec* find_arch(const std::string& name);
std::vector<std::string> known_archs();
// The names of the known architectures whose facts satisfy `pred`, as prose: "llama, qwen2 or gemma3".
std::string arch_names_where(bool (*pred)(const ArchFacts&));

// Shared helpers for architecture files.
// The Llama-style hyper-parameters under "<arch>." keys (the names llama.cpp's converter writes), and the
// Llama-style tensors (token_embd, blk.N.attn_norm/attn_q/k/v/output/ffn_norm/ffn_gate/up/down, output_norm,
// output or tied); families that add to them (arch/qwen.cpp) call these first.
ModelConfig read_llama_style_config(const GgufFile& file, const std::string& arch);
// fused: attn_qkv (rows q | k | v) and ffn_up holding gate | up, instead of the separate tensors (phi3).
DecoderTensors bind_llama_style(const GgufFile& file, const ModelConfig& cfg, bool fused = false);
const GgufTensor& require_tensor(const GgufFile& file, const std::string& name, std::vector<int64_t> shape);
// Every layer's per-head q and k RMSNorm weights, blk.N.attn_q_norm / attn_k_norm [head_dim] (qwen3, gemma3).
void bind_qk_norms(const GgufFile& file, const ModelConfig& cfg, DecoderTensors& d);
int64_t require_int(const GgufFile& file, const std::string& key);

}  // namespace tinfer

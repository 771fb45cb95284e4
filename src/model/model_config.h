// ModelConfig: the immutable hyper-parameters of a decoder-only Transformer, read once from the
// file by the architecture's reader and validated in one place (every problem reported together).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tinfer {

enum class RopeLayout { interleaved, neox };  // pairs (2i, 2i+1) vs (i, i + rot_dim/2)
enum class FfnAct { silu, gelu_tanh };         // the gated MLP's activation: SwiGLU (Llama) or GeGLU (Gemma)

struct ModelConfig {
  std::string arch;        // "llama", ...
  std::string name;        // general.name
  int64_t n_vocab = 0;
  int64_t dim = 0;         // embedding width
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  // < n_heads: grouped-query attention
  int64_t head_dim = 0;
  int64_t ffn_dim = 0;
  int64_t ctx_len = 0;     // trained context length
  int64_t rope_dim = 0;    // rotated dims per head (== head_dim for llama)
  float rms_eps = 1e-5f;
  float rope_base = 10000.f;
  float rope_scale = 1.f;  // linear position scaling (positions are divided by it)
  RopeLayout rope_layout = RopeLayout::interleaved;
  // Per-frequency divisors of the rotation angle (Llama 3's "llama3" RoPE scaling, the GGUF tensor rope_freqs.weight):
  // theta_i = pos / rope_scale * base^(-2i / rope_dim) / rope_freq_factors[i]. Empty, or rope_dim / 2 of them.
  std::vector<float> rope_freq_factors;
  // LongRoPE (Phi-3 128k, Phi-3.5: the tensors rope_factors_short / _long): rope_freq_factors holds the short
  // factors; a forward that positions more than rope_orig_ctx tokens (its configured context, as llama.cpp
  // decides) divides by rope_freq_factors_long instead. Either way cos and sin are scaled by rope_attn_factor.
  std::vector<float> rope_freq_factors_long;
  int64_t rope_orig_ctx = 0;
  float rope_attn_factor = 1.f;
  bool tied_output = false;  // output head reuses token_embd
  // Sliding-window attention (Mistral; Gemma 3's local layers): a windowed layer's token at position p attends to
  // positions (p - sliding_window, p] only. 0: none. swa_layers: [n_layers], 1 = windowed; empty = every layer.
  int64_t sliding_window = 0;
  std::vector<uint8_t> swa_layers;
  // The windowed layers' own RoPE (Gemma 3: base 10000, unscaled, no factors; the global layers keep rope_base,
  // rope_scale); 0 = every layer shares one RoPE.
  float rope_base_swa = 0.f;
  float embed_scale = 1.f;  // the residual stream starts as embedding * embed_scale (Gemma: sqrt(dim))
  float attn_scale = 0.f;   // attention scores are q.k * attn_scale; 0 = 1 / sqrt(head_dim)
  FfnAct ffn_act = FfnAct::silu;

  // Layer l's attention window (0 = full causal attention).
  int64_t window(int64_t l) const {
    return sliding_window > 0 && (swa_layers.empty() || swa_layers[size_t(l)]) ? sliding_window : 0;
  }
  // Whether layer l rotates with the windowed layers' RoPE (rope_base_swa, unscaled) instead of the global one.
  bool local_rope(int64_t l) const { return rope_base_swa > 0.f && window(l) > 0; }
  float scores_scale() const;

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  // KV cache bytes per token: 2 (K and V) x layers x kv_heads x head_dim x bytes per element.
  int64_t kv_bytes_per_token(int64_t bytes_per_elem) const { return 2 * n_layers * kv_dim() * bytes_per_elem; }

  // Throws Error listing every inconsistency (non-positive sizes, heads not dividing, ...).
  void validate() const;
};

}  // namespace tinfer

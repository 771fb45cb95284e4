// Synthetic decoder models (llama, qwen2, qwen3, phi3): seeded random weights in any supported tensor type, full
// <arch>.* metadata and a loadable SentencePiece-style (`llama`) tokenizer. Real model shapes come from
// a preset table; tests build tiny ones in memory. Same spec + seed -> the same bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "quant/dtype.h"

namespace tinfer {

struct SynthSpec {
  std::string name = "synth";  // general.name
  // general.architecture and the metadata prefix: llama; qwen2 (Q/K/V biases); qwen3 (per-head q/k RMSNorm);
  // phi3 (fused attn_qkv and gate|up ffn_up tensors); gemma3 (q/k norms, post-attention and post-MLP norms, GeGLU,
  // local/global layers). The non-llama families rotate neox pairs (rope_layout = neox).
  std::string arch = "llama";
  int64_t dim = 64;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t n_kv_heads = 2;  // < n_heads: grouped-query attention
  int64_t head_dim = 0;    // 0 = dim / n_heads; otherwise written as llama.attention.key_length
  int64_t ffn_dim = 96;
  int64_t n_vocab = 512;   // >= 259: <unk>, <s>, </s> and the 256 byte tokens come first
  int64_t ctx_len = 256;
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  // GGUF `llama` models rotate interleaved pairs; neox (half-split) is written as the custom key
  // tinfer.rope.layout = "neox" (read by model/arch/llama.cpp).
  RopeLayout rope_layout = RopeLayout::interleaved;
  bool tied_embeddings = false;  // no output.weight: the head reuses token_embd
  // Llama 3 RoPE scaling: written as the tensor rope_freqs.weight (rope dim / 2 divisors, see llama3_rope_factors).
  std::vector<float> rope_freq_factors;
  // phi3 LongRoPE: rope_freq_factors are then the short factors (tensor rope_factors_short.weight), these the long
  // ones (rope_factors_long.weight), with phi3.rope.scaling.original_context_length / attn_factor.
  std::vector<float> rope_factors_long;
  int64_t rope_orig_ctx = 0;
  float rope_attn_factor = 1.f;
  // Sliding-window attention, written as <arch>.attention.sliding_window (llama, phi3: every layer, Mistral, Phi-3;
  // gemma3: the local layers, five of every six). 0: none.
  int64_t sliding_window = 0;
  // Type of every 2-D weight matrix; norms stay f32. A matrix whose row length is not a multiple of
  // the type's block falls back (k-quants -> q8_0 when rows are a multiple of 32, otherwise f16).
  DType weight_type = DType::F32;
  uint64_t seed = 1;
  float weight_std = 0.02f;  // matrices: ~N(0, std^2); norm weights: ~1 + N(0, 0.05^2)

  int64_t resolved_head_dim() const { return head_dim > 0 ? head_dim : (n_heads > 0 ? dim / n_heads : 0); }
  // Every problem with the spec, one message each; empty when valid.
  std::vector<std::string> validate() const;
};

// Presets with real model shapes: tinyllama-1.1b, llama-7b, smollm2-135m, stories15m, llama3.2-1b, qwen2.5-0.5b,
// qwen3-0.6b, phi3-mini, mistral-7b, gemma3-270m, gemma3-1b.
// nullptr if unknown. The returned spec has weight_type F32 and seed 1; copy and adjust.
const SynthSpec* find_synth_preset(const std::string& name);
std::vector<std::string> synth_preset_names();

// The type a weight matrix with rows of `row_len` elements gets when `wanted` is requested.
DType synth_tensor_type(DType wanted, int64_t row_len);

// Writes the model as a GGUF v3 file. Weights are generated and quantized row by row on n_threads
// (0 = hardware concurrency); the result does not depend on n_threads. Throws Error on a bad spec
// or I/O failure.
void synthesize_model(const SynthSpec& spec, const std::string& out_path, int n_threads = 0);
// The same file as an in-memory image (for tests).
std::vector<uint8_t> synthesize_model_bytes(const SynthSpec& spec, int n_threads = 1);

// The synthetic SentencePiece vocabulary (also usable alone by tokenizer tests).
struct SynthVocab {
  std::vector<std::string> pieces;  // "<unk>", "<s>", "</s>", "<0x00>".."<0xFF>", chars, "▁word" prefixes, "tokN"
  std::vector<float> scores;        // higher merges first (SentencePiece log-probability style)
  std::vector<int32_t> types;       // TokenAttr values: 1 normal, 2 unknown, 3 control, 6 byte
};
SynthVocab synth_vocab(int64_t n_vocab);  // n_vocab >= 259; Error otherwise

}  // namespace tinfer

// Llama family (Llama 2/3, TinyLlama, SmolLM2, Mistral without sliding window, llama2.c models):
// RMSNorm, RoPE (linear scaling, or Llama 3's per-frequency factors from rope_freqs.weight), grouped-query
// attention, SwiGLU feed-forward, tied or separate output head.
#include <string>

#include "tinfer/error.h"
#include "model/arch/arch.h"
#include "formats/gguf.h"
#include "quant/type_table.h"

namespace tinfer {

ModelConfig read_llama_style_config(const GgufFile& f, const std::string& arch) {
  const std::string p = arch + ".";
  ModelConfig c;
  c.arch = arch;
  c.name = f.get_string("general.name").value_or("");
  c.dim = require_int(f, p + "embedding_length");
  c.n_layers = require_int(f, p + "block_count");
  c.n_heads = require_int(f, p + "attention.head_count");
  c.n_kv_heads = f.get_int(p + "attention.head_count_kv").value_or(c.n_heads);
  c.ffn_dim = require_int(f, p + "feed_forward_length");
  c.ctx_len = f.get_int(p + "context_length").value_or(2048);
  c.head_dim = c.n_heads > 0 ? f.get_int(p + "attention.key_length").value_or(c.dim / c.n_heads) : 0;
  c.rope_dim = f.get_int(p + "rope.dimension_count").value_or(c.head_dim);
  c.rms_eps = float(f.get_float(p + "attention.layer_norm_rms_epsilon").value_or(1e-5));
  c.rope_base = float(f.get_float(p + "rope.freq_base").value_or(10000.0));
  if (auto type = f.get_string(p + "rope.scaling.type"); type && *type == "linear")
    c.rope_scale = float(f.get_float(p + "rope.scaling.factor").value_or(1.0));
  // GGUF's llama layout is interleaved pairs; synthetic test models may ask for the half-split one.
  if (auto layout = f.get_string("tinfer.rope.layout")) {
    check(*layout == "neox" || *layout == "interleaved", "unknown tinfer.rope.layout '" + *layout + "'");
    c.rope_layout = *layout == "neox" ? RopeLayout::neox : RopeLayout::interleaved;
  }
  const GgufTensor* embd = f.tensor("token_embd.weight");
  check(embd != nullptr && embd->shape.size() == 2, "missing or malformed tensor 'token_embd.weight'");
  c.n_vocab = f.get_int(p + "vocab_size").value_or(embd->shape[1]);
  c.tied_output = f.tensor("output.weight") == nullptr;
  // Llama 3's RoPE scaling: llama.cpp's converter stores the per-frequency divisors as this tensor.
  if (const GgufTensor* rf = f.tensor("rope_freqs.weight")) {
    check(rf->shape.size() == 1 && rf->shape[0] == c.rope_dim / 2,
          "tensor 'rope_freqs.weight' must hold rope dimension / 2 = " + std::to_string(c.rope_dim / 2) + " factors");
    c.rope_freq_factors.resize(size_t(c.rope_dim / 2));
    type_traits(rf->type).to_float(rf->data, c.rope_freq_factors.data(), c.rope_dim / 2);
  }
  c.validate();
  return c;
}

DecoderTensors bind_llama_style(const GgufFile& f, const ModelConfig& c, bool fused) {
  DecoderTensors d;
  d.tok_embd = &require_tensor(f, "token_embd.weight", {c.dim, c.n_vocab});
  d.output_norm = &require_tensor(f, "output_norm.weight", {c.dim});
  d.output = c.tied_output ? d.tok_embd : &require_tensor(f, "output.weight", {c.dim, c.n_vocab});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerTensors t;
    t.attn_norm = &require_tensor(f, b + "attn_norm.weight", {c.dim});
    if (fused) {  // rows q | k | v
      t.wqkv = &require_tensor(f, b + "attn_qkv.weight", {c.dim, c.q_dim() + 2 * c.kv_dim()});
    } else {
      t.wq = &require_tensor(f, b + "attn_q.weight", {c.dim, c.q_dim()});
      t.wk = &require_tensor(f, b + "attn_k.weight", {c.dim, c.kv_dim()});
      t.wv = &require_tensor(f, b + "attn_v.weight", {c.dim, c.kv_dim()});
    }
    t.wo = &require_tensor(f, b + "attn_output.weight", {c.q_dim(), c.dim});
    t.ffn_norm = &require_tensor(f, b + "ffn_norm.weight", {c.dim});
    if (fused) {  // ffn_up holds gate | up
      t.w_gateup = &require_tensor(f, b + "ffn_up.weight", {c.dim, 2 * c.ffn_dim});
    } else {
      t.w_gate = &require_tensor(f, b + "ffn_gate.weight", {c.dim, c.ffn_dim});
      t.w_up = &require_tensor(f, b + "ffn_up.weight", {c.dim, c.ffn_dim});
    }
    t.w_down = &require_tensor(f, b + "ffn_down.weight", {c.ffn_dim, c.dim});
    d.layers.push_back(t);
  }
  return d;
}

void bind_qk_norms(const GgufFile& f, const ModelConfig& c, DecoderTensors& d) {
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerTensors& t = d.layers[size_t(l)];
    t.q_norm = &require_tensor(f, b + "attn_q_norm.weight", {c.head_dim});
    t.k_norm = &require_tensor(f, b + "attn_k_norm.weight", {c.head_dim});
  }
}

namespace {
// Mistral's sliding window on every layer, where the file names one (llama.cpp's converter does not write it for
// Mistral 7B, which it runs with full attention; checkpoints read from config.json do).
ModelConfig read_llama_config(const GgufFile& f) {
  ModelConfig c = read_llama_style_config(f, "llama");
  c.sliding_window = f.get_int("llama.attention.sliding_window").value_or(0);
  c.validate();
  return c;
}
DecoderTensors bind_llama(const GgufFile& f, const ModelConfig& c) { return bind_llama_style(f, c); }
}  // namespace

extern const ArchSpec kLlamaArch{"llama", read_llama_config, bind_llama,
                                 {.interleaved_rope = true,
                                  .sliding_window = true,
                                  .rope_factors = RopeFactorTensors::llama3}};

}  // namespace tinfer

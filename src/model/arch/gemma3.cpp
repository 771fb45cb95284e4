// Gemma 3 ("gemma3", text decoder): the embedding scaled by sqrt(dim); per block RMSNorm -> Q, K, V -> per-head
// RMSNorm of q and k -> NEOX RoPE -> attention -> RMSNorm (post_attention_norm) -> residual, then RMSNorm ->
// GeGLU (tanh GELU) -> RMSNorm (post_ffw_norm) -> residual; the tied head. Five of every six layers are local:
// a sliding window (gemma3.attention.sliding_window positions) and their own RoPE (base 10000, unscaled); every
// sixth is global (gemma3.rope.freq_base, any linear scaling). Metadata and tensor names as llama.cpp's converter
// writes them; it stores Gemma's (1 + w) norm weights already as 1 + w, so every norm here is a plain RMSNorm.
#include <cmath>
#include <string>

#include "tinfer/error.h"
#include "model/arch/arch.h"
#include "formats/gguf.h"

namespace tinfer {

namespace {

constexpr int64_t kDefaultSwaPattern = 6;  // layers l with (l + 1) % 6 != 0 are local (Gemma 3's config)
constexpr double kLocalRopeBase = 10000;   // rope_local_base_freq of every Gemma 3 size

ModelConfig read_gemma3(const GgufFile& f) {
  ModelConfig c = read_llama_style_config(f, "gemma3");
  c.rope_layout = RopeLayout::neox;
  c.ffn_act = FfnAct::gelu_tanh;
  c.embed_scale = std::sqrt(float(c.dim));
  // query_pre_attn_scalar: head_dim for every size but 27B, whose queries are scaled by dim / heads (168).
  c.attn_scale = 1.0f / std::sqrt(float(c.n_layers == 62 ? c.dim / c.n_heads : c.head_dim));
  // Required: without it the local layers would lose their window and their RoPE base (ModelConfig::local_rope).
  c.sliding_window = require_int(f, "gemma3.attention.sliding_window");
  check(c.sliding_window > 0, "gemma3.attention.sliding_window must be > 0");
  const int64_t pattern = f.get_int("gemma3.attention.sliding_window_pattern").value_or(kDefaultSwaPattern);
  check(pattern >= 1, "gemma3.attention.sliding_window_pattern must be >= 1");
  c.swa_layers.resize(size_t(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) c.swa_layers[size_t(l)] = (l + 1) % pattern != 0;
  c.rope_base_swa = float(f.get_float("gemma3.rope.freq_base_swa").value_or(kLocalRopeBase));
  check(f.tensor("output.weight") == nullptr || f.tensor("output.weight") == f.tensor("token_embd.weight"),
        "gemma3: an untied output head is not Gemma 3");
  if (auto softcap = f.get_float("gemma3.final_logit_softcapping"); softcap && *softcap > 0)
    fail("gemma3: final logit soft-capping (Gemma 2) is not supported");
  c.validate();
  return c;
}

DecoderTensors bind_gemma3(const GgufFile& f, const ModelConfig& c) {
  DecoderTensors d = bind_llama_style(f, c);
  bind_qk_norms(f, c, d);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerTensors& t = d.layers[size_t(l)];
    t.post_attn_norm = &require_tensor(f, b + "post_attention_norm.weight", {c.dim});
    t.post_ffn_norm = &require_tensor(f, b + "post_ffw_norm.weight", {c.dim});
  }
  return d;
}

}  // namespace

extern const ArchSpec kGemma3Arch{"gemma3", read_gemma3, bind_gemma3,
                                  {.qk_norm = true, .post_norms = true, .sliding_window = true, .tied_head = true}};

}  // namespace tinfer

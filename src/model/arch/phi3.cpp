// Phi-3 family ("phi3": Phi-3 / Phi-3.5 mini): the Llama block with Q, K and V in one fused tensor (attn_qkv, rows
// q | k | v) and gate and up in one (ffn_up, rows gate | up), NEOX RoPE, a separate output head; metadata under
// "phi3." keys and tensor names as llama.cpp's converter writes them.
// Not implemented yet, so refused or bounded rather than run wrong: LongRoPE (rope_factors_long/short: the file
// is refused), and the sliding window (phi3.attention.sliding_window): the context is capped at the window, where
// full attention equals windowed attention.
#include <algorithm>
#include <string>

#include "core/error.h"
#include "model/arch/arch.h"
#include "model/gguf.h"

namespace tinfer {

namespace {

ModelConfig read_phi3(const GgufFile& f) {
  ModelConfig c = read_llama_style_config(f, "phi3");
  c.rope_layout = RopeLayout::neox;
  check(f.tensor("rope_factors_long.weight") == nullptr && f.tensor("rope_factors_short.weight") == nullptr,
        "phi3: LongRoPE scaling (rope_factors_long/short) is not supported yet");
  if (auto window = f.get_int("phi3.attention.sliding_window"); window && *window > 0)
    c.ctx_len = std::min<int64_t>(c.ctx_len, *window);
  return c;
}

DecoderTensors bind_phi3(const GgufFile& f, const ModelConfig& c) {
  DecoderTensors d;
  d.tok_embd = &require_tensor(f, "token_embd.weight", {c.dim, c.n_vocab});
  d.output_norm = &require_tensor(f, "output_norm.weight", {c.dim});
  d.output = c.tied_output ? d.tok_embd : &require_tensor(f, "output.weight", {c.dim, c.n_vocab});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerTensors t;
    t.attn_norm = &require_tensor(f, b + "attn_norm.weight", {c.dim});
    t.wqkv = &require_tensor(f, b + "attn_qkv.weight", {c.dim, c.q_dim() + 2 * c.kv_dim()});
    t.wo = &require_tensor(f, b + "attn_output.weight", {c.q_dim(), c.dim});
    t.ffn_norm = &require_tensor(f, b + "ffn_norm.weight", {c.dim});
    t.w_gateup = &require_tensor(f, b + "ffn_up.weight", {c.dim, 2 * c.ffn_dim});
    t.w_down = &require_tensor(f, b + "ffn_down.weight", {c.ffn_dim, c.dim});
    d.layers.push_back(t);
  }
  return d;
}

}  // namespace

extern const ArchSpec kPhi3Arch{"phi3", read_phi3, bind_phi3};

}  // namespace tinfer

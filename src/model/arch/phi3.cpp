// Phi-3 family ("phi3": Phi-3 / Phi-3.5 mini): the Llama block with Q, K and V in one fused tensor (attn_qkv, rows
// q | k | v) and gate and up in one (ffn_up, rows gate | up), NEOX RoPE, a separate output head; metadata under
// "phi3." keys and tensor names as llama.cpp's converter writes them.
// The sliding window (phi3.attention.sliding_window, e.g. 2047 for Phi-3 mini 4k) on every layer, as llama.cpp runs
// it: position p attends to (p - window, p]. LongRoPE (the 128k models, Phi-3.5): per-frequency divisors for short
// contexts (rope_factors_short.weight) and long ones (rope_factors_long.weight, used when the forward's context is
// beyond phi3.rope.scaling.original_context_length), cos and sin scaled by phi3.rope.scaling.attn_factor.
#include <string>
#include <vector>

#include "tinfer/error.h"
#include "model/arch/arch.h"
#include "formats/gguf.h"
#include "quant/type_table.h"

namespace tinfer {

namespace {

std::vector<float> rope_factor_tensor(const GgufFile& f, const char* name, int64_t n) {
  const GgufTensor* t = f.tensor(name);
  check(t != nullptr, std::string("phi3: LongRoPE needs both rope_factors_long and rope_factors_short; '") + name +
                          "' is missing");
  check(t->shape.size() == 1 && t->shape[0] == n,
        std::string("tensor '") + name + "' must hold rope dimension / 2 = " + std::to_string(n) + " factors");
  std::vector<float> v(static_cast<size_t>(n));
  type_traits(t->type).to_float(t->data, v.data(), n);
  return v;
}

ModelConfig read_phi3(const GgufFile& f) {
  ModelConfig c = read_llama_style_config(f, "phi3");
  c.rope_layout = RopeLayout::neox;
  if (f.tensor("rope_factors_long.weight") || f.tensor("rope_factors_short.weight")) {
    c.rope_freq_factors = rope_factor_tensor(f, "rope_factors_short.weight", c.rope_dim / 2);
    c.rope_freq_factors_long = rope_factor_tensor(f, "rope_factors_long.weight", c.rope_dim / 2);
    c.rope_orig_ctx = require_int(f, "phi3.rope.scaling.original_context_length");
    c.rope_attn_factor = float(f.get_float("phi3.rope.scaling.attn_factor").value_or(1.0));
  }
  c.sliding_window = f.get_int("phi3.attention.sliding_window").value_or(0);
  c.validate();
  return c;
}

DecoderTensors bind_phi3(const GgufFile& f, const ModelConfig& c) { return bind_llama_style(f, c, true); }

}  // namespace

extern const ArchSpec kPhi3Arch{"phi3", read_phi3, bind_phi3,
                                {.fused = true, .sliding_window = true, .rope_factors = RopeFactorTensors::longrope}};

}  // namespace tinfer

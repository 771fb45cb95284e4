// Phi-3 family ("phi3": Phi-3 / Phi-3.5 mini): the Llama block with Q, K and V in one fused tensor (attn_qkv, rows
// q | k | v) and gate and up in one (ffn_up, rows gate | up), NEOX RoPE, a separate output head; metadata under
// "phi3." keys and tensor names as llama.cpp's converter writes them.
// The sliding window (phi3.attention.sliding_window, e.g. 2047 for Phi-3 mini 4k) on every layer, as llama.cpp runs
// it: position p attends to (p - window, p]. Not implemented yet, so refused rather than run wrong: LongRoPE
// (rope_factors_long/short).
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
  c.sliding_window = f.get_int("phi3.attention.sliding_window").value_or(0);
  c.validate();
  return c;
}

DecoderTensors bind_phi3(const GgufFile& f, const ModelConfig& c) { return bind_llama_style(f, c, true); }

}  // namespace

extern const ArchSpec kPhi3Arch{"phi3", read_phi3, bind_phi3};

}  // namespace tinfer

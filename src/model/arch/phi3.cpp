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

DecoderTensors bind_phi3(const GgufFile& f, const ModelConfig& c) { return bind_llama_style(f, c, true); }

}  // namespace

extern const ArchSpec kPhi3Arch{"phi3", read_phi3, bind_phi3};

}  // namespace tinfer

// Qwen family: Qwen 2 / 2.5 ("qwen2": the Llama block with biases on the Q, K and V projections) and Qwen 3
// ("qwen3": no biases, an RMSNorm over each q and k head before RoPE, head_dim set apart from dim / heads). Both
// rotate half-split (NEOX) pairs, as llama.cpp runs them; metadata under "qwen2." / "qwen3." keys and tensor
// names as llama.cpp's converter writes them (blk.N.attn_q.bias, blk.N.attn_q_norm.weight, ...).
#include <string>

#include "model/arch/arch.h"
#include "formats/gguf.h"

namespace tinfer {

namespace {

ModelConfig qwen_config(const GgufFile& f, const char* arch) {
  ModelConfig c = read_llama_style_config(f, arch);
  c.rope_layout = RopeLayout::neox;
  return c;
}

ModelConfig read_qwen2(const GgufFile& f) { return qwen_config(f, "qwen2"); }
ModelConfig read_qwen3(const GgufFile& f) { return qwen_config(f, "qwen3"); }

DecoderTensors bind_qwen2(const GgufFile& f, const ModelConfig& c) {
  DecoderTensors d = bind_llama_style(f, c);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerTensors& t = d.layers[size_t(l)];
    t.bq = &require_tensor(f, b + "attn_q.bias", {c.q_dim()});
    t.bk = &require_tensor(f, b + "attn_k.bias", {c.kv_dim()});
    t.bv = &require_tensor(f, b + "attn_v.bias", {c.kv_dim()});
  }
  return d;
}

DecoderTensors bind_qwen3(const GgufFile& f, const ModelConfig& c) {
  DecoderTensors d = bind_llama_style(f, c);
  bind_qk_norms(f, c, d);
  return d;
}

}  // namespace

extern const ArchSpec kQwen2Arch{"qwen2", read_qwen2, bind_qwen2, {.qkv_bias = true}};
extern const ArchSpec kQwen3Arch{"qwen3", read_qwen3, bind_qwen3, {.qk_norm = true}};

}  // namespace tinfer

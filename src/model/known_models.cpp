// The built-in table of well-known model shapes (`tinfer kv-plan --like NAME`), from each checkpoint's published
// config.json; params is the checkpoint's parameter count (tests check it against llama_param_count).
#include <algorithm>
#include <cctype>

#include "tinfer/error.h"
#include "model/model_shape.h"

namespace tinfer {

namespace {

// name, layers, heads, kv heads, head_dim, hidden, ffn, vocab, ctx, tied embeddings, qkv bias, params
constexpr KnownModel kKnownModels[] = {
    {"tinyllama-1.1b", 22, 32, 4, 64, 2048, 5632, 32000, 2048, false, false, 1'100'048'384},
    {"llama-2-7b", 32, 32, 32, 128, 4096, 11008, 32000, 4096, false, false, 6'738'415'616},
    {"llama-2-13b", 40, 40, 40, 128, 5120, 13824, 32000, 4096, false, false, 13'015'864'320},
    {"llama-2-70b", 80, 64, 8, 128, 8192, 28672, 32000, 4096, false, false, 68'976'648'192},
    {"llama-3-8b", 32, 32, 8, 128, 4096, 14336, 128256, 8192, false, false, 8'030'261'248},
    {"llama-3-70b", 80, 64, 8, 128, 8192, 28672, 128256, 8192, false, false, 70'553'706'496},
    {"mistral-7b", 32, 32, 8, 128, 4096, 14336, 32000, 32768, false, false, 7'241'732'096, 4096},
    {"qwen2.5-7b", 28, 28, 4, 128, 3584, 18944, 152064, 32768, false, true, 7'615'616'512},
    {"smollm2-135m", 30, 9, 3, 64, 576, 1536, 49152, 8192, true, false, 134'515'008},
    {"llama-3.2-1b", 16, 32, 8, 64, 2048, 8192, 128256, 131072, true, false, 1'235'814'400},
    {"phi-3-mini", 32, 32, 32, 96, 3072, 8192, 32064, 4096, false, false, 3'821'079'552},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

}  // namespace

std::span<const KnownModel> known_models() { return kKnownModels; }

std::string known_model_names() {
  std::string s;
  for (const KnownModel& m : kKnownModels) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
}

ModelShape model_shape_like(const std::string& name, const std::string& weight_type) {
  const std::string want = lower(name);
  for (const KnownModel& m : kKnownModels) {
    if (want != m.name) continue;
    ModelShape s;
    ModelConfig& c = s.config;
    c.arch = "llama";
    c.name = m.name;
    c.n_layers = m.layers;
    c.n_heads = m.heads;
    c.n_kv_heads = m.kv_heads;
    c.head_dim = m.head_dim;
    c.rope_dim = m.head_dim;
    c.dim = m.hidden;
    c.ffn_dim = m.ffn;
    c.n_vocab = m.vocab;
    c.ctx_len = m.ctx;
    c.tied_output = m.tied_embeddings;
    c.sliding_window = m.sliding_window;
    c.validate();
    s.params = m.params;
    s.weight_type = weight_type.empty() ? "f16" : weight_type;
    s.weight_bytes = weight_bytes_as(s.params, s.weight_type);
    s.source = std::string("built-in shape ") + m.name;
    return s;
  }
  fail("unknown --like model '" + name + "' (known: " + known_model_names() + ")");
}

}  // namespace tinfer

// ModelConfig validation: one function that reports every problem at once.
#include "model/model_config.h"

#include <cmath>
#include <vector>

#include "tinfer/error.h"

namespace tinfer {

float ModelConfig::scores_scale() const { return attn_scale > 0.f ? attn_scale : 1.0f / std::sqrt(float(head_dim)); }

void ModelConfig::validate() const {
  std::vector<std::string> problems;
  auto positive = [&](const char* what, int64_t v, int64_t max) {
    if (v <= 0 || v > max) problems.push_back(std::string(what) + " = " + std::to_string(v) + " is out of range [1, " +
                                              std::to_string(max) + "]");
  };
  positive("vocab size", n_vocab, int64_t(1) << 24);
  positive("embedding length", dim, 1 << 16);
  positive("block count", n_layers, 1024);
  positive("head count", n_heads, 1024);
  positive("kv head count", n_kv_heads, 1024);
  positive("head dim", head_dim, 1024);
  positive("feed-forward length", ffn_dim, 1 << 20);
  positive("context length", ctx_len, int64_t(1) << 24);
  if (n_heads > 0 && n_kv_heads > 0 && n_heads % n_kv_heads != 0)
    problems.push_back("head count " + std::to_string(n_heads) + " is not a multiple of kv head count " +
                       std::to_string(n_kv_heads));
  if (rope_dim <= 0 || rope_dim > head_dim || rope_dim % 2 != 0)
    problems.push_back("rope dimension " + std::to_string(rope_dim) + " must be even and in [2, head dim " +
                       std::to_string(head_dim) + "]");
  if (!(rms_eps > 0.f && rms_eps < 1.f)) problems.push_back("rms epsilon " + std::to_string(rms_eps) + " out of (0, 1)");
  if (!(rope_base > 1.f)) problems.push_back("rope base " + std::to_string(rope_base) + " must be > 1");
  if (!(rope_scale > 0.f)) problems.push_back("rope scale " + std::to_string(rope_scale) + " must be > 0");
  if (!rope_freq_factors.empty() && int64_t(rope_freq_factors.size()) != rope_dim / 2)
    problems.push_back("rope frequency factors: " + std::to_string(rope_freq_factors.size()) + " of them, rope dimension / 2 is " +
                       std::to_string(rope_dim / 2));
  for (float f : rope_freq_factors)
    if (!(f > 0.f && f < 1e6f)) {
      problems.push_back("rope frequency factor " + std::to_string(f) + " must be positive and finite");
      break;
    }
  if (!rope_freq_factors_long.empty() &&
      (rope_freq_factors_long.size() != rope_freq_factors.size() || rope_orig_ctx <= 0))
    problems.push_back("LongRoPE: long factors need as many short ones and the original context length");
  for (float f : rope_freq_factors_long)
    if (!(f > 0.f && f < 1e6f)) {
      problems.push_back("long rope frequency factor " + std::to_string(f) + " must be positive and finite");
      break;
    }
  if (!(rope_attn_factor > 0.f && rope_attn_factor < 10.f))
    problems.push_back("rope attention factor " + std::to_string(rope_attn_factor) + " out of (0, 10)");
  if (sliding_window < 0) problems.push_back("sliding window " + std::to_string(sliding_window) + " must be >= 0");
  if (!swa_layers.empty() && int64_t(swa_layers.size()) != n_layers)
    problems.push_back("sliding-window layer pattern names " + std::to_string(swa_layers.size()) + " layers, the model has " +
                       std::to_string(n_layers));
  if (rope_base_swa != 0.f && !(rope_base_swa > 1.f))
    problems.push_back("windowed layers' rope base " + std::to_string(rope_base_swa) + " must be > 1");
  if (!(embed_scale > 0.f && embed_scale < 1e6f)) problems.push_back("embedding scale " + std::to_string(embed_scale) + " out of (0, 1e6)");
  if (!(attn_scale >= 0.f && attn_scale < 1e3f)) problems.push_back("attention scale " + std::to_string(attn_scale) + " out of [0, 1e3)");
  if (problems.empty()) return;
  std::string msg = "invalid model configuration (" + arch + "):";
  for (auto& p : problems) msg += "\n  - " + p;
  fail(msg);
}

}  // namespace tinfer

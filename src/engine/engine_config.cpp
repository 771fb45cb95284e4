// EngineConfig::validate: every invalid field of the engine configuration, one message each (the model-
// dependent checks, such as max_model_len against the KV budget, happen when the engine is created).
#include <tinfer/engine.h>

#include <string>

#include "core/error.h"

namespace tinfer {

std::vector<std::string> EngineConfig::validate() const {
  std::vector<std::string> e;
  if (threads < 0) e.push_back("threads must be >= 0 (0 = all cores)");
  if (kv_memory_bytes < 0) e.push_back("kv_memory_bytes must be >= 0");
  if (kv_memory_bytes == 0 && !(kv_fraction > 0 && kv_fraction <= 1)) e.push_back("kv_fraction must be in (0, 1]");
  if (block_size < 1 || block_size > 256) e.push_back("block_size must be in [1, 256]");
  if (max_batched_tokens < 1) e.push_back("max_batched_tokens must be >= 1");
  if (max_seqs < 1) e.push_back("max_seqs must be >= 1");
  if (max_model_len < 0) e.push_back("max_model_len must be >= 0 (0 = the model's context)");
  if (default_max_tokens < 1) e.push_back("default_max_tokens must be >= 1");
  if (max_tokens_cap < 1) e.push_back("max_tokens_cap must be >= 1");
  if (default_max_tokens > max_tokens_cap) e.push_back("default_max_tokens must be <= max_tokens_cap");
  if (long_request_tokens < 0) e.push_back("long_request_tokens must be >= 0 (0 = no background class)");
  if (max_background_running < 1) e.push_back("max_background_running must be >= 1");
  for (std::string& s : spec.validate()) e.push_back(std::move(s));
  return e;
}

KvPrecision EngineConfig::kv_precision(int64_t n_layers) const {
  KvPrecision p;
  if (!kv_layers.empty()) {
    check(int64_t(kv_layers.size()) == n_layers, "the KV plan gives " + std::to_string(kv_layers.size()) +
                                                     " layers but the model has " + std::to_string(n_layers));
    p = KvPrecision{kv_layers, kv_k_smooth};
  } else {
    p = KvPrecision::uniform(n_layers, kv_dtype_k.value_or(kv_dtype), kv_dtype_v.value_or(kv_dtype));
    p.k_smooth = kv_k_smooth;
  }
  if (!skip.attn.empty()) {
    check(int64_t(skip.attn.size()) == n_layers, "the skip plan gives " + std::to_string(skip.attn.size()) +
                                                     " layers but the model has " + std::to_string(n_layers));
    p.no_kv = skip.attn;  // a skipped attention block writes and reads no KV: its layer holds none
  }
  return p;
}

}  // namespace tinfer

// EngineConfig::validate: every invalid field of the engine configuration, one message each (the model-
// dependent checks, such as max_model_len against the KV budget, happen when the engine is created).
#include <tinfer/engine.h>

#include <string>

#include "tinfer/error.h"

namespace tinfer {

std::vector<std::string> EngineConfig::validate() const {
  std::vector<std::string> e;
  if (threads < 0) e.push_back("threads must be >= 0 (0 = all cores)");
  if (kv.memory_bytes < 0) e.push_back("kv_memory_bytes must be >= 0");
  if (kv.memory_bytes == 0 && !(kv.fraction > 0 && kv.fraction <= 1)) e.push_back("kv_fraction must be in (0, 1]");
  if (kv.block_size < 1 || kv.block_size > 256) e.push_back("block_size must be in [1, 256]");
  if (scheduler.max_batched_tokens < 1) e.push_back("max_batched_tokens must be >= 1");
  if (scheduler.max_seqs < 1) e.push_back("max_seqs must be >= 1");
  if (scheduler.max_model_len < 0) e.push_back("max_model_len must be >= 0 (0 = the model's context)");
  if (requests.default_max_tokens < 1) e.push_back("default_max_tokens must be >= 1");
  if (requests.max_tokens_cap < 1) e.push_back("max_tokens_cap must be >= 1");
  if (requests.default_max_tokens > requests.max_tokens_cap) e.push_back("default_max_tokens must be <= max_tokens_cap");
  if (requests.long_request_tokens < 0) e.push_back("long_request_tokens must be >= 0 (0 = no background class)");
  if (scheduler.max_background_running < 1) e.push_back("max_background_running must be >= 1");
  for (std::string& s : spec.validate()) e.push_back(std::move(s));
  return e;
}

KvPrecision EngineConfig::kv_precision(int64_t n_layers) const {
  KvPrecision p;
  if (!plans.kv_layers.empty()) {
    check(int64_t(plans.kv_layers.size()) == n_layers, "the KV plan gives " + std::to_string(plans.kv_layers.size()) +
                                                     " layers but the model has " + std::to_string(n_layers));
    p = KvPrecision{plans.kv_layers, plans.kv_k_smooth};
  } else {
    p = KvPrecision::uniform(n_layers, kv.dtype_k.value_or(kv.dtype), kv.dtype_v.value_or(kv.dtype));
    p.k_smooth = plans.kv_k_smooth;
  }
  if (!plans.skip.attn.empty()) {
    check(int64_t(plans.skip.attn.size()) == n_layers, "the skip plan gives " + std::to_string(plans.skip.attn.size()) +
                                                     " layers but the model has " + std::to_string(n_layers));
    p.no_kv = plans.skip.attn;  // a skipped attention block writes and reads no KV: its layer holds none
  }
  return p;
}

}  // namespace tinfer

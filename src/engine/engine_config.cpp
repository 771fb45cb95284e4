// EngineConfig::validate: every invalid field of the engine configuration, one message each (the model-
// dependent checks, such as max_model_len against the KV budget, happen when the engine is created).
#include <tinfer/engine.h>

#include "model/kv_storage.h"

namespace tinfer {

std::vector<std::string> EngineConfig::validate() const {
  std::vector<std::string> e;
  if (threads < 0) e.push_back("threads must be >= 0 (0 = all cores)");
  if (kv_memory_bytes < 0) e.push_back("kv_memory_bytes must be >= 0");
  if (kv_memory_bytes == 0 && !(kv_fraction > 0 && kv_fraction <= 1)) e.push_back("kv_fraction must be in (0, 1]");
  if (block_size < 1 || block_size > 256) e.push_back("block_size must be in [1, 256]");
  if (kv_layout != "paged" && kv_layout != "reserved") e.push_back("kv_layout must be paged or reserved");
  if (KvDtype t; !parse_kv_dtype(kv_dtype, &t)) e.push_back("kv_dtype must be f32 or f16");
  if (batching != "continuous" && batching != "static" && batching != "static-padded")
    e.push_back("batching must be continuous, static or static-padded");
  if (max_batched_tokens < 1) e.push_back("max_batched_tokens must be >= 1");
  if (max_seqs < 1) e.push_back("max_seqs must be >= 1");
  if (max_model_len < 0) e.push_back("max_model_len must be >= 0 (0 = the model's context)");
  if (default_max_tokens < 1) e.push_back("default_max_tokens must be >= 1");
  if (max_tokens_cap < 1) e.push_back("max_tokens_cap must be >= 1");
  return e;
}

}  // namespace tinfer

// The engine's KV memory budget: the bytes the cache may take (explicit, or a fraction of MemAvailable once the
// weights are loaded and packed), fitted into a number of blocks of the cache's per-layer bytes (KvPrecision), and a
// one-line description for the start-up log.
#pragma once
#include <cstddef>
#include <string>

#include "kvcache/memory_planner.h"
#include "tinfer/kv_precision.h"
#include "model/model_config.h"

namespace tinfer {

struct KvBudget {
  size_t budget_bytes = 0;   // what the planner may use
  size_t mem_available = 0;  // MemAvailable when the budget was taken (0 if explicit or unknown)
  std::string how;           // how it was chosen, for the start-up line
};

// MemAvailable from /proc/meminfo in bytes; 0 if unreadable.
size_t mem_available_bytes();

// kv_memory_bytes if > 0; else what max_seqs sequences of max_model_len tokens can use (whole blocks),
// capped by kv_fraction x MemAvailable: a server for 4 sequences does not take half the machine (and touch
// every page of it as freed blocks are handed out again). Throws Error when MemAvailable is unknown and no
// explicit budget was given.
KvBudget kv_budget(int64_t kv_memory_bytes, double kv_fraction, const ModelConfig& cfg, const KvPrecision& precision,
                         int block_size, int max_seqs, int max_model_len, const kv::KvWindow& window = {});
// kv_budget's fraction branch with MemAvailable given (tinfer kv-plan: what the engine would see once its
// weights are packed); Error when mem_available is 0.
KvBudget kv_budget_of_available(size_t mem_available, double kv_fraction, const ModelConfig& cfg,
                                      const KvPrecision& precision, int block_size, int max_seqs, int max_model_len,
                                      const kv::KvWindow& window = {});

// The planner's view of a model's cache: per-layer bytes per token from the precision (Error if its layer
// count is not the model's).
kv::KvShape kv_shape(const ModelConfig& cfg, const KvPrecision& precision, const kv::KvWindow& window = {});

// The model's sliding-window layers as the planner takes them (none: an empty window), for max_seqs sequences
// and steps of max_step_tokens tokens.
kv::KvWindow kv_window_of(const ModelConfig& cfg, int max_seqs, int max_step_tokens);

// Sized by the cache's element types. Throws Error (naming max_model_len) when not even one sequence of
// max_model_len tokens fits.
kv::KvMemoryPlan fit_kv_budget(const ModelConfig& cfg, size_t budget_bytes, int block_size, int max_model_len,
                                const KvPrecision& precision, const kv::KvWindow& window = {});

// "KV cache: 4096 blocks x 16 tokens = 65536 tokens, 1408 MiB (22528 bytes/token); max concurrency 32 at 2048"
std::string describe_kv_budget(const kv::KvMemoryPlan& plan, const KvBudget& budget, const KvPrecision& precision);

}  // namespace tinfer

// KV capacity report (`tinfer kv-plan`): for a model's shape, a budget, a block size, a context length and the
// cache's KV types, what the engine would allocate — computed by the engine's own kv_budget and fit_kv_budget,
// so the figures equal Engine::create's for the same inputs — plus each layer's bytes and the same budget
// planned for every uniform KvDtype, for comparison.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tinfer/kv_precision.h"
#include "engine/kv_budget.h"
#include "model/model_config.h"

namespace tinfer {

struct KvCapacityQuery {
  int64_t kv_memory_bytes = 0;  // > 0: the budget (the engine's --kv-memory)
  double kv_fraction = 0.5;     // else this fraction of the memory the engine would see after loading:
  size_t mem_available = 0;     //   MemAvailable (0: read /proc/meminfo now)
  int64_t weight_bytes = 0;     //   less the weights, which the engine packs before it reads MemAvailable
  int max_seqs = 64;            //   capped, as the engine does, at max_seqs sequences of context_len
  int block_size = 16;
  int context_len = 0;  // 0: the model's context length; more than it is refused (as the engine refuses it)
  bool window_kv = true;      // sliding-window layers keep their window only (the engine's --kv-window)
  int max_step_tokens = 512;  // the engine's --max-batched-tokens (the window pool holds one step's new tokens)
};

struct KvLayerBytes {
  KvLayerTypes types;
  int64_t k_bytes_per_token = 0;  // every kv head's K of one token, scales included
  int64_t v_bytes_per_token = 0;
};

struct KvDtypeCapacity {
  KvDtype type = KvDtype::f32;  // K and V
  size_t bytes_per_token = 0;
  int num_blocks = 0;
  int64_t capacity_tokens = 0;
  int max_concurrency = 0;  // 0 when not one sequence of context_len fits
};

struct KvCapacityReport {
  KvBudget budget;
  KvPrecision precision;
  std::vector<KvLayerBytes> layers;       // [n_layers]
  kv::KvMemoryPlan plan;                  // what the engine allocates: blocks, tokens, bytes, concurrency
  std::vector<KvDtypeCapacity> by_dtype;  // f32, f16, int8, int4 in plan's budget (budget.budget_bytes)
};

// Error (naming the cause) for a context beyond the model's, weights that leave no memory, or a budget that
// cannot hold one sequence of context_len at the chosen types.
KvCapacityReport kv_capacity(const ModelConfig& cfg, const KvPrecision& precision, const KvCapacityQuery& q);

}  // namespace tinfer

// KV plan: read MemAvailable, size the budget, and call the pure planner with the model's KV shape.
#include "engine/kv_plan.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace tinfer {

size_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

EngineKvBudget kv_budget(int64_t kv_memory_bytes, double kv_fraction) {
  EngineKvBudget b;
  if (kv_memory_bytes > 0) {
    b.budget_bytes = static_cast<size_t>(kv_memory_bytes);
    return b;
  }
  b.mem_available = mem_available_bytes();
  check(b.mem_available > 0, "cannot read MemAvailable from /proc/meminfo: give the KV budget in bytes");
  b.budget_bytes = kv::kv_budget_from_fraction(b.mem_available, kv_fraction);
  return b;
}

kv::KvMemoryPlan plan_engine_kv(const ModelConfig& cfg, size_t budget_bytes, int block_size, int max_model_len,
                                KvDtype dtype) {
  const kv::KvShape shape{.num_layers = static_cast<int>(cfg.n_layers),
                          .num_kv_heads = static_cast<int>(cfg.n_kv_heads),
                          .head_dim = static_cast<int>(cfg.head_dim),
                          .bytes_per_elem = kv_dtype_bytes(dtype)};
  try {
    return kv::plan_kv_memory(shape, budget_bytes, block_size, max_model_len);
  } catch (const Error& e) {
    fail(std::string("max_model_len ") + std::to_string(max_model_len) + " does not fit the KV cache: " + e.what());
  }
}

std::string describe_kv_plan(const kv::KvMemoryPlan& p, const EngineKvBudget& b, KvDtype dtype) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "KV cache: %zu bytes/token (%s), %d blocks x %d tokens = %lld tokens, %.1f MiB%s; "
                "max concurrency %d at max_model_len %d",
                p.bytes_per_token, kv_dtype_name(dtype), p.num_blocks, p.block_size, static_cast<long long>(p.capacity_tokens),
                double(p.bytes_used) / (1 << 20),
                b.mem_available ? (" (of " + std::to_string(b.mem_available >> 20) + " MiB available)").c_str() : "",
                p.max_concurrency, p.context_len);
  return buf;
}

}  // namespace tinfer

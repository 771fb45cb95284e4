// KV budget: read MemAvailable, size the budget, and fit it with the pure planner to the model's KV shape.
#include "engine/kv_budget.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "tinfer/error.h"

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

namespace {

}  // namespace

kv::KvWindow kv_window_of(const ModelConfig& cfg, int max_seqs, int max_step_tokens) {
  kv::KvWindow w;
  if (cfg.sliding_window <= 0) return w;
  w.window_tokens = static_cast<int>(cfg.sliding_window);
  for (int64_t l = 0; l < cfg.n_layers; ++l) w.layers.push_back(cfg.window(l) > 0 ? 1 : 0);
  w.max_seqs = max_seqs;
  w.max_step_tokens = max_step_tokens;
  return w;
}

kv::KvShape kv_shape(const ModelConfig& cfg, const KvPrecision& precision, const kv::KvWindow& window) {
  check(precision.n_layers() == cfg.n_layers, "KV precision names " + std::to_string(precision.n_layers()) +
                                                  " layers but the model has " + std::to_string(cfg.n_layers));
  kv::KvShape s{.num_layers = static_cast<int>(cfg.n_layers),
                .num_kv_heads = static_cast<int>(cfg.n_kv_heads),
                .head_dim = static_cast<int>(cfg.head_dim)};
  for (int64_t l = 0; l < cfg.n_layers; ++l)
    s.layer_bytes_per_token.push_back(precision.layer_bytes_per_token(l, cfg.n_kv_heads, cfg.head_dim));
  s.window = window;
  return s;
}

namespace {

std::string mib(size_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

}  // namespace

KvBudget kv_budget(int64_t kv_memory_bytes, double kv_fraction, const ModelConfig& cfg, const KvPrecision& precision,
                         int block_size, int max_seqs, int max_model_len, const kv::KvWindow& window) {
  KvBudget b;
  if (kv_memory_bytes > 0) {
    b.budget_bytes = static_cast<size_t>(kv_memory_bytes);
    b.how = "--kv-memory";
    return b;
  }
  return kv_budget_of_available(mem_available_bytes(), kv_fraction, cfg, precision, block_size, max_seqs, max_model_len,
                                window);
}

KvBudget kv_budget_of_available(size_t mem_available, double kv_fraction, const ModelConfig& cfg,
                                      const KvPrecision& precision, int block_size, int max_seqs, int max_model_len,
                                      const kv::KvWindow& window) {
  KvBudget b;
  b.mem_available = mem_available;
  check(b.mem_available > 0, "cannot read MemAvailable from /proc/meminfo: give the KV budget in bytes");
  const size_t fraction = kv::kv_budget_from_fraction(b.mem_available, kv_fraction);
  const size_t demand = kv::kv_demand_bytes(kv_shape(cfg, precision, window), block_size, max_model_len, max_seqs);
  char frac[32];
  std::snprintf(frac, sizeof frac, "%.2f", kv_fraction);
  if (demand <= fraction) {
    b.budget_bytes = demand;
    b.how = "max_seqs " + std::to_string(max_seqs) + " x max_model_len " + std::to_string(max_model_len) +
            " (under --kv-fraction " + frac + " of " + mib(b.mem_available) + " available)";
  } else {
    b.budget_bytes = fraction;
    b.how = std::string("--kv-fraction ") + frac + " of " + mib(b.mem_available) + " available (max_seqs " +
            std::to_string(max_seqs) + " x max_model_len " + std::to_string(max_model_len) + " would take " +
            mib(demand) + ")";
  }
  return b;
}

kv::KvMemoryPlan fit_kv_budget(const ModelConfig& cfg, size_t budget_bytes, int block_size, int max_model_len,
                                const KvPrecision& precision, const kv::KvWindow& window) {
  const kv::KvShape shape = kv_shape(cfg, precision, window);
  try {
    return kv::plan_kv_memory(shape, budget_bytes, block_size, max_model_len);
  } catch (const Error& e) {
    fail(std::string("max_model_len ") + std::to_string(max_model_len) + " does not fit the KV cache: " + e.what());
  }
}

std::string describe_kv_budget(const kv::KvMemoryPlan& p, const KvBudget& b, const KvPrecision& precision) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "KV cache: %zu bytes/token (%s), %d blocks x %d tokens = %lld tokens, %.1f MiB, sized by %s; "
                "max concurrency %d at max_model_len %d",
                p.bytes_per_token, precision.describe().c_str(), p.num_blocks, p.block_size, static_cast<long long>(p.capacity_tokens),
                double(p.bytes_used) / (1 << 20), b.how.c_str(), p.max_concurrency, p.context_len);
  std::string out = buf;
  if (p.window_blocks > 0)
    out += "; sliding-window layers apart: " + std::to_string(p.window_blocks) + " blocks for " +
           std::to_string(p.window_seqs) + " windows (" +
           std::to_string(p.window_bytes_per_token) + " bytes/token, windows of " + std::to_string(p.window_tokens) +
           " tokens, " + std::to_string(p.window_blocks_per_seq) + " blocks per sequence at most)";
  else if (p.window_release)
    out += "; every layer windowed (" + std::to_string(p.window_tokens) + " tokens): blocks leaving the window return to "
           "the pool, " + std::to_string(p.window_blocks_per_seq) + " blocks per sequence at most";
  return out;
}

}  // namespace tinfer

// KV capacity report: the engine's budget and plan functions, applied without a model loaded.
#include "engine/kv_capacity.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "tinfer/error.h"

namespace tinfer {

namespace {

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(int64_t(1) << 30));
  return buf;
}

KvDtypeCapacity uniform_capacity(const ModelConfig& cfg, KvDtype t, size_t budget, int block_size, int context_len,
                                 const kv::KvWindow& window) {
  const kv::KvShape shape = kv_shape(cfg, KvPrecision::uniform(cfg.n_layers, t), window);
  KvDtypeCapacity c{.type = t, .bytes_per_token = kv::kv_bytes_per_token(shape)};
  try {
    const kv::KvMemoryPlan p = kv::plan_kv_memory(shape, budget, block_size, context_len);
    c.num_blocks = p.num_blocks;
    c.capacity_tokens = p.capacity_tokens;
    c.max_concurrency = p.max_concurrency;
  } catch (const Error&) {
    // Not one sequence fits: still say how many whole blocks (tokens) the budget holds.
    const size_t blocks = std::min(budget / (c.bytes_per_token * size_t(block_size)), size_t{INT32_MAX});
    c.num_blocks = int(blocks);
    c.capacity_tokens = int64_t(blocks) * block_size;
  }
  return c;
}

}  // namespace

KvCapacityReport kv_capacity(const ModelConfig& cfg, const KvPrecision& precision, const KvCapacityQuery& q) {
  const int context = q.context_len > 0 ? q.context_len : int(cfg.ctx_len);
  check(context <= cfg.ctx_len, "context " + std::to_string(context) + " is beyond the model's context length " +
                                    std::to_string(cfg.ctx_len) + " (the engine refuses it)");
  check(q.block_size >= 1 && q.block_size <= 256,
        "block size must be in [1, 256], got " + std::to_string(q.block_size));
  check(q.max_seqs >= 1, "max_seqs must be >= 1, got " + std::to_string(q.max_seqs));
  KvCapacityReport r;
  r.precision = precision;
  const kv::KvWindow window = q.window_kv ? kv_window_of(cfg, q.max_seqs, q.max_step_tokens) : kv::KvWindow{};
  if (q.kv_memory_bytes > 0) {
    r.budget = kv_budget(q.kv_memory_bytes, q.kv_fraction, cfg, precision, q.block_size, q.max_seqs, context, window);
  } else {
    const size_t now = q.mem_available > 0 ? q.mem_available : mem_available_bytes();
    check(now > 0, "cannot read MemAvailable from /proc/meminfo: give the KV budget with --memory");
    check(int64_t(now) > q.weight_bytes, "the weights (" + gib(q.weight_bytes) + ") do not fit the " +
                                             gib(int64_t(now)) + " of memory available: no room for a KV cache");
    r.budget = kv_budget_of_available(now - size_t(q.weight_bytes), q.kv_fraction, cfg, precision, q.block_size,
                                      q.max_seqs, context, window);
  }
  r.plan = fit_kv_budget(cfg, r.budget.budget_bytes, q.block_size, context, precision, window);
  for (int64_t l = 0; l < cfg.n_layers; ++l) {
    const KvLayerTypes t = precision.layers[size_t(l)];
    r.layers.push_back(
        {t, cfg.n_kv_heads * kv_head_bytes(t.k, cfg.head_dim), cfg.n_kv_heads * kv_head_bytes(t.v, cfg.head_dim)});
  }
  for (const KvDtypeInfo& i : kKvDtypes)
    r.by_dtype.push_back(uniform_capacity(cfg, i.type, r.budget.budget_bytes, q.block_size, context, window));
  return r;
}

}  // namespace tinfer

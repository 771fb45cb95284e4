// KV memory planner arithmetic; every refusal says what was asked and what fits.
#include "kvcache/memory_planner.h"

#include <cstdio>
#include <string>

#include "core/error.h"

namespace tinfer::kv {
namespace {

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

size_t kv_bytes_per_token(const KvShape& s) {
  check(s.num_layers > 0 && s.num_kv_heads > 0 && s.head_dim > 0 && s.bytes_per_elem > 0,
        "kv planner: layers, kv_heads, head_dim and bytes_per_elem must all be positive (got " +
            std::to_string(s.num_layers) + ", " + std::to_string(s.num_kv_heads) + ", " + std::to_string(s.head_dim) +
            ", " + std::to_string(s.bytes_per_elem) + ")");
  if (s.layer_bytes_per_token.empty()) return size_t{2} * s.num_layers * s.num_kv_heads * s.head_dim * s.bytes_per_elem;
  check(s.layer_bytes_per_token.size() == static_cast<size_t>(s.num_layers),
        "kv planner: " + std::to_string(s.layer_bytes_per_token.size()) + " per-layer sizes for " +
            std::to_string(s.num_layers) + " layers");
  size_t total = 0;
  for (int64_t b : s.layer_bytes_per_token) {  // 0: a layer that holds no KV (its attention is skipped)
    check(b >= 0, "kv planner: a layer's bytes per token must not be negative, got " + std::to_string(b));
    total += static_cast<size_t>(b);
  }
  check(total > 0, "kv planner: no layer holds KV (every layer's attention is skipped)");
  return total;
}

KvMemoryPlan plan_kv_memory(const KvShape& shape, size_t budget_bytes, int block_size, int context_len) {
  check(block_size > 0, "kv planner: block_size must be positive, got " + std::to_string(block_size));
  check(context_len > 0, "kv planner: context length must be positive, got " + std::to_string(context_len));
  KvMemoryPlan p;
  p.bytes_per_token = kv_bytes_per_token(shape);
  p.bytes_per_block = p.bytes_per_token * block_size;
  p.block_size = block_size;
  p.context_len = context_len;
  p.blocks_per_seq = (context_len + block_size - 1) / block_size;
  const size_t blocks = budget_bytes / p.bytes_per_block;
  p.num_blocks = blocks > size_t{INT32_MAX} ? INT32_MAX : static_cast<int>(blocks);
  p.capacity_tokens = static_cast<int64_t>(p.num_blocks) * block_size;
  p.bytes_used = static_cast<size_t>(p.num_blocks) * p.bytes_per_block;
  p.max_concurrency = p.num_blocks / p.blocks_per_seq;
  if (p.max_concurrency < 1) {
    const size_t need = static_cast<size_t>(p.blocks_per_seq) * p.bytes_per_block;
    fail("kv planner: one sequence of " + std::to_string(context_len) + " tokens needs " +
         std::to_string(p.blocks_per_seq) + " blocks (" + mib(need) + ", " + std::to_string(p.bytes_per_token) +
         " bytes/token) but the KV budget of " + mib(budget_bytes) + " holds only " + std::to_string(p.num_blocks) +
         " blocks (" + std::to_string(p.capacity_tokens) + " tokens); lower the context length or raise the budget");
  }
  return p;
}

size_t kv_budget_from_fraction(size_t total_bytes, double fraction) {
  check(fraction > 0.0 && fraction <= 1.0,
        "kv planner: memory fraction must be in (0, 1], got " + std::to_string(fraction));
  return static_cast<size_t>(static_cast<double>(total_bytes) * fraction);
}

}  // namespace tinfer::kv

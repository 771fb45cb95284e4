// KV memory planner arithmetic; every refusal says what was asked and what fits.
#include "kvcache/memory_planner.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "tinfer/error.h"

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

namespace {

int blocks_for(int64_t tokens, int block_size) { return static_cast<int>((tokens + block_size - 1) / block_size); }

// The bytes per token of the windowed layers and of the others (every layer's when there is no window).
struct WindowSplit {
  size_t window = 0, full = 0;
};
WindowSplit split_by_window(const KvShape& s) {
  WindowSplit w;
  const KvWindow& win = s.window;
  if (win.window_tokens <= 0) return {0, kv_bytes_per_token(s)};
  check(win.layers.size() == static_cast<size_t>(s.num_layers),
        "kv planner: the sliding-window layer list names " + std::to_string(win.layers.size()) + " layers for " +
            std::to_string(s.num_layers));
  check(win.max_seqs >= 1 && win.max_step_tokens >= 0, "kv planner: a window needs max_seqs >= 1 and max_step_tokens >= 0");
  kv_bytes_per_token(s);  // validates the shape
  for (int l = 0; l < s.num_layers; ++l) {
    const size_t b = s.layer_bytes_per_token.empty() ? size_t{2} * s.num_kv_heads * s.head_dim * s.bytes_per_elem
                                                     : static_cast<size_t>(s.layer_bytes_per_token[size_t(l)]);
    (win.layers[size_t(l)] ? w.window : w.full) += b;
  }
  return w;
}

// Blocks one sequence holds at most in a windowed pool while it decodes: its window's (entered part-way: one more),
// plus one of slack (the block a step opens); a prefill chunk's extra blocks are the step's, counted once for the
// pool. Never more than its whole context's.
int window_blocks_per_seq(const KvWindow& w, int block_size, int context_len) {
  return std::min(blocks_for(context_len, block_size), blocks_for(w.window_tokens, block_size) + 2);
}

}  // namespace

size_t kv_demand_bytes(const KvShape& shape, int block_size, int context_len, int max_seqs) {
  const WindowSplit w = split_by_window(shape);
  const size_t full = static_cast<size_t>(max_seqs) * blocks_for(context_len, block_size) * block_size * w.full;
  if (w.window == 0) return full;
  const int wps = window_blocks_per_seq(shape.window, block_size, context_len);
  const size_t window_blocks = static_cast<size_t>(max_seqs) * wps + blocks_for(shape.window.max_step_tokens, block_size);
  return full + window_blocks * block_size * w.window;
}

KvMemoryPlan plan_kv_memory(const KvShape& shape, size_t budget_bytes, int block_size, int context_len) {
  check(block_size > 0, "kv planner: block_size must be positive, got " + std::to_string(block_size));
  check(context_len > 0, "kv planner: context length must be positive, got " + std::to_string(context_len));
  const WindowSplit split = split_by_window(shape);
  if (split.window > 0) {
    KvMemoryPlan p;
    const KvWindow& w = shape.window;
    p.block_size = block_size;
    p.context_len = context_len;
    p.window_tokens = w.window_tokens;
    p.window_blocks_per_seq = window_blocks_per_seq(w, block_size, context_len);
    const int step_blocks = blocks_for(w.max_step_tokens, block_size);
    if (split.full == 0) {  // every layer windowed: one pool, blocks given back as they leave the window
      p.window_release = true;
      p.bytes_per_token = split.window;
      p.bytes_per_block = p.bytes_per_token * block_size;
      const size_t blocks = budget_bytes / p.bytes_per_block;
      p.num_blocks = blocks > size_t{INT32_MAX} ? INT32_MAX : static_cast<int>(blocks);
      p.capacity_tokens = static_cast<int64_t>(p.num_blocks) * block_size;
      p.bytes_used = static_cast<size_t>(p.num_blocks) * p.bytes_per_block;
      p.blocks_per_seq = p.window_blocks_per_seq;
      p.max_concurrency = std::max(0, p.num_blocks - step_blocks) / p.window_blocks_per_seq;
      if (p.max_concurrency < 1)
        fail("kv planner: one sequence's window of " + std::to_string(w.window_tokens) + " tokens and a step's " +
             std::to_string(w.max_step_tokens) + " new ones need " + std::to_string(p.window_blocks_per_seq + step_blocks) +
             " blocks (" + std::to_string(p.bytes_per_token) + " bytes/token) but the KV budget of " + mib(budget_bytes) +
             " holds only " + std::to_string(p.num_blocks));
      return p;
    }
    // Mixed: the window layers' pool first (max_seqs windows and a step's new tokens, fewer windows when the budget
    // cannot also hold that many whole contexts in the other layers), the rest for the others.
    p.window_bytes_per_token = split.window;
    p.blocks_per_seq = blocks_for(context_len, block_size);
    const size_t step_bytes = static_cast<size_t>(step_blocks) * block_size * split.window;
    const size_t seq_bytes = (static_cast<size_t>(p.window_blocks_per_seq) * split.window +
                              static_cast<size_t>(p.blocks_per_seq) * split.full) * block_size;
    const size_t fit = budget_bytes > step_bytes ? (budget_bytes - step_bytes) / seq_bytes : 0;
    p.window_seqs = static_cast<int>(std::clamp<size_t>(fit, 1, static_cast<size_t>(w.max_seqs)));
    p.window_blocks = p.window_seqs * p.window_blocks_per_seq + step_blocks;
    const size_t window_bytes = static_cast<size_t>(p.window_blocks) * block_size * split.window;
    p.bytes_per_token = split.full;
    p.bytes_per_block = p.bytes_per_token * block_size;
    const size_t blocks = budget_bytes > window_bytes ? (budget_bytes - window_bytes) / p.bytes_per_block : 0;
    p.num_blocks = blocks > size_t{INT32_MAX} ? INT32_MAX : static_cast<int>(blocks);
    p.capacity_tokens = static_cast<int64_t>(p.num_blocks) * block_size;
    p.bytes_used = static_cast<size_t>(p.num_blocks) * p.bytes_per_block + window_bytes;
    p.max_concurrency = std::min(p.num_blocks / p.blocks_per_seq, p.window_seqs);
    if (p.max_concurrency < 1)
      fail("kv planner: the sliding-window layers' pool (" + std::to_string(p.window_blocks) + " blocks, " +
           mib(window_bytes) + ") and one sequence of " + std::to_string(context_len) + " tokens in the other layers (" +
           std::to_string(p.blocks_per_seq) + " blocks, " + std::to_string(p.bytes_per_token) +
           " bytes/token) do not fit the KV budget of " + mib(budget_bytes) +
           "; lower the context length or max_seqs, or raise the budget");
    return p;
  }
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

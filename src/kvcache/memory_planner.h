// KV memory planner: from a model's KV shape and a byte budget, how many blocks fit, how many tokens they hold,
// and how many sequences of a given context length can run at once. Pure functions over plain structs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tinfer::kv {

// Sliding-window layers, whose attention reads only the last window_tokens positions: their KV is kept for the
// window alone (kv_cache_groups.h) instead of the whole context.
struct KvWindow {
  int window_tokens = 0;        // 0: none
  std::vector<uint8_t> layers;  // [num_layers] 1 = a sliding-window layer
  int max_seqs = 1;             // sequences that hold a window at once
  int max_step_tokens = 0;      // tokens one step adds over every sequence (their blocks come on top)
};

struct KvShape {
  int num_layers = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int bytes_per_elem = 2;  // 2 for f16/bf16 KV, 4 for f32 (one type for every layer, no scales)
  // Quantized or per-layer caches: the bytes one token takes in each layer (K and V of every kv head, scales
  // included), which then replace 2 x kv_heads x head_dim x bytes_per_elem. Empty or num_layers entries; 0 for a
  // layer that holds no KV (its attention skipped by a layer-skip plan), so only the layers kept are counted.
  std::vector<int64_t> layer_bytes_per_token;
  KvWindow window;  // empty: every layer keeps every position
};

struct KvMemoryPlan {
  size_t bytes_per_token = 0;  // 2 (K and V) x layers x kv_heads x head_dim x bytes_per_elem, or the layers' sum
  size_t bytes_per_block = 0;  // bytes_per_token x block_size
  int block_size = 0;
  int num_blocks = 0;           // floor(budget / bytes_per_block)
  int64_t capacity_tokens = 0;  // num_blocks x block_size
  size_t bytes_used = 0;        // num_blocks x bytes_per_block (<= budget)
  int context_len = 0;
  int blocks_per_seq = 0;   // ceil(context_len / block_size)
  int max_concurrency = 0;  // sequences of context_len that fit at once (>= 1)
  // Sliding window (KvShape::window). Mixed models (Gemma 3): the window layers get a pool of their own of
  // window_blocks blocks (window_bytes_per_token each token, its bytes in bytes_used), sized for max_seqs
  // windows plus one step's new tokens; num_blocks and bytes_per_token are then the full-attention layers'.
  // Every layer windowed (Mistral): one pool (window_blocks 0) whose sequences give back blocks that leave the
  // window (window_release), so capacity_tokens bounds the windows held, not a sequence's length.
  int window_tokens = 0;
  bool window_release = false;
  int window_blocks = 0;
  size_t window_bytes_per_token = 0;
  int window_blocks_per_seq = 0;  // blocks one sequence holds at most in a windowed pool
  int window_seqs = 0;            // windows the mixed model's pool is sized for (max_seqs, or fewer to fit)
};

size_t kv_bytes_per_token(const KvShape& shape);

// Throws tinfer::Error for a malformed shape, or when not even one sequence of context_len fits in the budget.
KvMemoryPlan plan_kv_memory(const KvShape& shape, size_t budget_bytes, int block_size, int context_len);

// Bytes max_seqs sequences of context_len take at most (every layer's KV, windows counted as windows): what a
// budget needs to run them all at once.
size_t kv_demand_bytes(const KvShape& shape, int block_size, int context_len, int max_seqs);

// Budget as a fraction (0, 1] of a total (e.g. free device memory); throws for a fraction outside that range.
size_t kv_budget_from_fraction(size_t total_bytes, double fraction);

}  // namespace tinfer::kv

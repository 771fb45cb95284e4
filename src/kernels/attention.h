// Paged, flash-style attention as a kernel: plain-data arguments (no model types), one implementation
// per ISA in the kernel table (cpu/<isa>/attention.cpp), and a thread-pool entry point here.
// For each query token, stream its sequence's KV blocks as tiles, keep a running max and sum (online
// softmax), never materialise the full score matrix.
#pragma once
#include <cstdint>

#include "tinfer/kv_dtype.h"

namespace tinfer {

class ThreadPool;
struct KernelTable;

// One layer of a paged KV cache, as bytes and strides (the byte format: kernels/kv_quant.h, which also
// fills every field but the pointers: kv_layer_geometry). K block b starts at k + b * k_block_bytes: kv head
// h's codes at + h * k_head_bytes, k_rows rows of k_row_bytes (row r, slot j: dimension r of slot j;
// int4: dimensions r and r + ceil(head_dim / 2)), then the scales at + k_scales_offset + (h * block_size +
// j) * k_scale_bytes. V block b starts at v + b * v_block_bytes: slot j, kv head h at + j * v_slot_bytes +
// h * v_head_bytes, its scales at + v_scales_offset + (j * n_kv_heads + h) * v_scale_bytes. f32 values are
// floats, f16 IEEE half bits.
struct KvLayerView {
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  KvDtype k_dtype = KvDtype::f32;
  KvDtype v_dtype = KvDtype::f32;
  int64_t block_size = 0;
  int64_t k_row_bytes = 0, k_head_bytes = 0, k_scales_offset = 0, k_scale_bytes = 0, k_block_bytes = 0;
  int64_t v_head_bytes = 0, v_slot_bytes = 0, v_scales_offset = 0, v_scale_bytes = 0, v_block_bytes = 0;
};

// One attention call over a ragged batch of n_tokens query tokens. Token i attends to positions
// 0..positions[i] of its sequence (with a sliding window W > 0: positions[i] - W + 1 .. positions[i]), whose block table (position p in block table[p / block_size]) is
// block_tables[i]; those K/V must already be written. q: rows of q_stride floats, each starting with
// n_heads * head_dim (rotated) query values; out: rows of out_stride floats, n_heads * head_dim written.
// Query head h reads kv head h / (n_heads / n_kv_heads).
struct AttentionArgs {
  KvLayerView kv;
  int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float scale = 0;  // scores are q·k * scale (1 / sqrt(head_dim))
  int64_t window = 0;  // > 0: sliding-window attention over the last `window` positions (blocks before it unread)
  int64_t n_tokens = 0;
  const int32_t* positions = nullptr;           // [n_tokens]
  const int32_t* const* block_tables = nullptr;  // [n_tokens]
  const float* q = nullptr;
  int64_t q_stride = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
};

// Limits of every table's kernel (the portable path's score tile and per-group state).
constexpr int64_t kAttnMaxGroup = 64;       // query heads per kv head
constexpr int64_t kAttnMaxBlockSize = 256;  // KV block size

// Work items [item0, item1) of one call: item = token * n_kv_heads + kv_head (the query heads of a GQA
// group share each K/V load). Each table's kernel falls back to the portable one for shapes its fast
// path does not take.
using AttentionFn = void (*)(const AttentionArgs& a, int64_t item0, int64_t item1);

// Splits the items over the pool and runs the active table's kernel (or kt's). Throws Error beyond
// the limits above or if n_heads is not a multiple of n_kv_heads.
void paged_attention(const AttentionArgs& a, ThreadPool& pool);
void paged_attention(const AttentionArgs& a, ThreadPool& pool, const KernelTable& kt);

// The portable kernel (any block size <= kAttnMaxBlockSize, any head_dim, every KvDtype): the fallback
// every table's row calls for the shapes its fast path does not take.
void generic_paged_attention(const AttentionArgs& a, int64_t item0, int64_t item1);

}  // namespace tinfer

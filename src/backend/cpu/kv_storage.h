// KvStorage: the KV cache memory, in fixed-size blocks of `block_size` token slots per layer.
// Which block holds which positions of which sequence is decided elsewhere (block tables); this
// class only owns the bytes. Each layer's K and V have their own element type (KvPrecision: f32, f16,
// int8, int4) and so their own block bytes; the byte format inside a block is kernels/kv_quant.h's.
// Layer l's region: K blocks [n_blocks][k_block_bytes(l)] then V blocks [n_blocks][v_block_bytes(l)].
#pragma once
#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "tinfer/kv_precision.h"
#include "kernels/attention.h"
#include "backend/backend.h"
#include "model/model_config.h"

namespace tinfer {

// The CPU backend's KvCache. Usually every layer of the model; a precision naming fewer layers gives a cache of
// the first layers only, for forwards limited to them (ForwardBatch::n_layers: a self-draft's own cache).
class ThreadPool;

class KvStorage final : public KvCache {
 public:
  // n_window_blocks > 0: the sliding-window layers (cfg.window(l) > 0) hold that many blocks of their own (KV group
  // 1, addressed by the window tables); 0: every layer holds n_blocks.
  KvStorage(const ModelConfig& cfg, int64_t n_blocks, int64_t block_size, const KvPrecision& precision,
            int64_t n_window_blocks = 0);
  KvStorage(const ModelConfig& cfg, int64_t n_blocks, int64_t block_size, KvDtype dtype = KvDtype::f32)
      : KvStorage(cfg, n_blocks, block_size, KvPrecision::uniform(cfg.n_layers, dtype)) {}

  int64_t n_layers() const { return n_layers_; }
  int64_t n_blocks() const override { return n_blocks_; }
  // Whether layer l keeps its KV in the window group's pool (then its blocks come from the window tables).
  bool in_window_group(int64_t l) const { return group_[size_t(l)] == 1; }
  bool has_window_group() const { return n_window_blocks_ > 0; }
  int64_t block_size() const override { return block_size_; }
  int64_t kv_dim() const { return n_kv_heads_ * head_dim_; }
  const KvPrecision& precision() const override { return precision_; }
  size_t bytes() const override { return buf_.size(); }

  // Layer `layer`'s K and V blocks as the attention kernels read them: base pointers, element types and
  // strides (kernels/attention.h).
  KvLayerView layer_view(int64_t layer) const;
  // Writes one position's K ([kv_dim], heads back to back) and V into their block, quantizing for int8/int4.
  // Safe to call concurrently for different slots (also of one block).
  void write(int64_t layer, int64_t block, int64_t slot, const float* k, const float* v);
  // Copies every layer's K and V of block `src` into block `dst` (copy-on-write).
  void copy_block(int64_t src, int64_t dst, int group = 0) override;

  // Blocks up to `block` of KV group `group` are about to be written: keeps [0, block + kPopulateAhead) of
  // every layer's K and V regions of that group resident, kPopulateAhead / 2 blocks or more at a time, each
  // range with one madvise(MADV_POPULATE_WRITE) (contents untouched). Why: the arena is reserved lazily for
  // the worst case, and the block pool hands out never-used ids in increasing order (all the time with
  // --kv-reuse fresh; with resident, only while the running peak grows), so every new block's first writes
  // faulted its pages in 4 KiB at a time inside the per-token KV writes (SmolLM2:
  // ~90 faults a block; under 32 requests the fault path was 3-5% of the server's cycles, BENCHMARKS §1ac).
  // Populating ahead costs the same page clearing without a fault per page; `pool` shares the regions out
  // (one thread alone clearing what both cores cleared in their own faults measured 1% slower served).
  // Called once per forward, before any write. A kernel without MADV_POPULATE_WRITE (before 5.14) keeps the
  // demand faults.
  void populate_through(int group, int64_t block, ThreadPool* pool = nullptr);
  static constexpr int64_t kPopulateAhead = 32;
  int64_t populated_blocks(int group) const { return populated_[group]; }

 private:
  int64_t n_layers_, n_blocks_, block_size_, n_kv_heads_, head_dim_, n_window_blocks_;
  std::vector<uint8_t> group_;      // [n_layers] KV group of each layer (0, or 1 = the window pool)
  KvPrecision precision_;
  std::vector<KvLayerView> views_;  // [n_layers], pointers into buf_
  Buffer buf_;
  int64_t populated_[2] = {0, 0};   // per KV group: blocks [0, populated_) are resident in every layer
  bool populate_works_ = true;      // false once madvise refused MADV_POPULATE_WRITE
};

}  // namespace tinfer

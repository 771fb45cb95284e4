// KvStorage: the KV cache memory, in fixed-size blocks of `block_size` token slots per layer.
// Which block holds which positions of which sequence is decided elsewhere (block tables); this
// class only owns the bytes. Per layer, fp32: K blocks [n_blocks][kv_heads][head_dim][block_size]
// (transposed, so one vector load gives a dimension of every position of a block: attention scores
// a whole block without horizontal sums); V blocks [n_blocks][block_size][kv_dim].
#pragma once
#include <cstdint>

#include "core/buffer.h"
#include "model/model_config.h"

namespace tinfer {

class KvStorage {
 public:
  KvStorage(const ModelConfig& cfg, int64_t n_blocks, int64_t block_size);

  int64_t n_blocks() const { return n_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t kv_dim() const { return kv_dim_; }
  size_t bytes() const { return buf_.size(); }

  // K of block `block`: [kv_heads][head_dim][block_size]. V of one slot: [kv_dim].
  float* k_block(int64_t layer, int64_t block) { return base(layer, 0, block, 0); }
  const float* k_block(int64_t layer, int64_t block) const { return const_cast<KvStorage*>(this)->k_block(layer, block); }
  float* v(int64_t layer, int64_t block, int64_t slot) { return base(layer, 1, block, slot); }
  const float* v(int64_t layer, int64_t block, int64_t slot) const { return const_cast<KvStorage*>(this)->v(layer, block, slot); }
  // Writes one position's K ([kv_dim], heads back to back) and V into their block.
  void write(int64_t layer, int64_t block, int64_t slot, const float* k, const float* v);
  // Copies every layer's K and V of block `src` into block `dst` (copy-on-write).
  void copy_block(int64_t src, int64_t dst);

 private:
  float* base(int64_t layer, int64_t kv, int64_t block, int64_t slot) {
    return buf_.as<float>() + (((layer * 2 + kv) * n_blocks_ + block) * block_size_ + slot) * kv_dim_;
  }
  int64_t n_layers_, n_blocks_, block_size_, kv_dim_;
  Buffer buf_;
};

}  // namespace tinfer

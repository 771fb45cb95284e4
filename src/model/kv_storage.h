// KvStorage: the KV cache memory, in fixed-size blocks of `block_size` token slots per layer.
// Which block holds which positions of which sequence is decided elsewhere (block tables); this
// class only owns the bytes. Per layer, in fp32 or fp16 (KvDtype): K blocks [n_blocks][kv_heads][head_dim]
// [block_size] (transposed, so one vector load gives a dimension of every position of a block: attention
// scores a whole block without horizontal sums); V blocks [n_blocks][block_size][kv_dim].
#pragma once
#include <cstdint>

#include "core/buffer.h"
#include "core/kv_dtype.h"
#include "kernels/attention.h"
#include "model/backend.h"
#include "model/model_config.h"

namespace tinfer {

// The CPU backend's KvCache.
class KvStorage final : public KvCache {
 public:
  KvStorage(const ModelConfig& cfg, int64_t n_blocks, int64_t block_size, KvDtype dtype = KvDtype::f32);

  int64_t n_blocks() const override { return n_blocks_; }
  int64_t block_size() const override { return block_size_; }
  int64_t kv_dim() const { return kv_dim_; }
  KvDtype dtype() const override { return dtype_; }
  size_t bytes() const override { return buf_.size(); }

  // K of block `block`: [kv_heads][head_dim][block_size]. V of one slot: [kv_dim]. T is the element
  // type: float for f32, uint16_t (IEEE half bits) for f16.
  template <class T>
  const T* k_block(int64_t layer, int64_t block) const {
    return reinterpret_cast<const T*>(base(layer, 0, block, 0));
  }
  template <class T>
  const T* v(int64_t layer, int64_t block, int64_t slot) const {
    return reinterpret_cast<const T*>(base(layer, 1, block, slot));
  }
  // Layer `layer`'s K and V blocks as the attention kernels read them: base pointers, element type and
  // strides (kernels/attention.h). Per layer, so the element type or layout may differ between layers.
  KvLayerView layer_view(int64_t layer) const;
  // Writes one position's K ([kv_dim], heads back to back) and V into their block.
  void write(int64_t layer, int64_t block, int64_t slot, const float* k, const float* v);
  // Copies every layer's K and V of block `src` into block `dst` (copy-on-write).
  void copy_block(int64_t src, int64_t dst) override;

 private:
  uint8_t* base(int64_t layer, int64_t kv, int64_t block, int64_t slot) const {
    return const_cast<uint8_t*>(buf_.data()) +
           ((((layer * 2 + kv) * n_blocks_ + block) * block_size_ + slot) * kv_dim_) * elem_;
  }
  int64_t n_layers_, n_blocks_, block_size_, kv_dim_;
  KvDtype dtype_;
  int64_t elem_;  // bytes per element
  Buffer buf_;
};

}  // namespace tinfer

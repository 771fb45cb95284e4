// KvStorage: one huge-page buffer for every layer's K and V blocks.
#include "model/kv_storage.h"

#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"

namespace tinfer {

KvStorage::KvStorage(const ModelConfig& cfg, int64_t n_blocks, int64_t block_size, KvDtype dtype)
    : n_layers_(cfg.n_layers),
      n_blocks_(n_blocks),
      block_size_(block_size),
      kv_dim_(cfg.kv_dim()),
      dtype_(dtype),
      elem_(kv_dtype_bytes(dtype)) {
  check(n_blocks > 0 && block_size > 0, "KV cache needs at least one block of at least one token");
  buf_ = Buffer(size_t(n_layers_) * 2 * n_blocks_ * block_size_ * kv_dim_ * elem_, true);
}

KvLayerView KvStorage::layer_view(int64_t layer) const {
  check(layer >= 0 && layer < n_layers_, "KV layer " + std::to_string(layer) + " out of range");
  KvLayerView v;
  v.k = base(layer, 0, 0, 0);
  v.v = base(layer, 1, 0, 0);
  v.dtype = dtype_;
  v.block_size = block_size_;
  v.k_block_bytes = v.v_block_bytes = block_size_ * kv_dim_ * elem_;
  v.v_slot_bytes = kv_dim_ * elem_;
  return v;
}

void KvStorage::copy_block(int64_t src, int64_t dst) {
  const size_t bytes = size_t(block_size_ * kv_dim_ * elem_);
  for (int64_t l = 0; l < n_layers_; ++l) {
    std::memcpy(base(l, 0, dst, 0), base(l, 0, src, 0), bytes);
    std::memcpy(base(l, 1, dst, 0), base(l, 1, src, 0), bytes);
  }
}

void KvStorage::write(int64_t layer, int64_t block, int64_t slot, const float* k, const float* v) {
  if (dtype_ == KvDtype::f32) {
    auto* kb = reinterpret_cast<float*>(base(layer, 0, block, 0));
    for (int64_t d = 0; d < kv_dim_; ++d) kb[d * block_size_ + slot] = k[d];  // [kv_dim][block_size]
    std::memcpy(base(layer, 1, block, slot), v, size_t(kv_dim_) * sizeof(float));
    return;
  }
  auto* kb = reinterpret_cast<uint16_t*>(base(layer, 0, block, 0));
  auto* vb = reinterpret_cast<uint16_t*>(base(layer, 1, block, slot));
  for (int64_t d = 0; d < kv_dim_; ++d) {
    kb[d * block_size_ + slot] = f32_to_fp16(k[d]);
    vb[d] = f32_to_fp16(v[d]);
  }
}

}  // namespace tinfer

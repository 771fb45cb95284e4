// KvStorage: one huge-page buffer for every layer's K and V blocks.
#include "model/kv_storage.h"

#include <cstring>

#include "core/error.h"

namespace tinfer {

KvStorage::KvStorage(const ModelConfig& cfg, int64_t n_blocks, int64_t block_size)
    : n_layers_(cfg.n_layers), n_blocks_(n_blocks), block_size_(block_size), kv_dim_(cfg.kv_dim()) {
  check(n_blocks > 0 && block_size > 0, "KV cache needs at least one block of at least one token");
  buf_ = Buffer(size_t(n_layers_) * 2 * n_blocks_ * block_size_ * kv_dim_ * sizeof(float), true);
}

void KvStorage::copy_block(int64_t src, int64_t dst) {
  const size_t bytes = size_t(block_size_) * kv_dim_ * sizeof(float);
  for (int64_t l = 0; l < n_layers_; ++l) {
    std::memcpy(k_block(l, dst), k_block(l, src), bytes);
    std::memcpy(v(l, dst, 0), v(l, src, 0), bytes);
  }
}

void KvStorage::write(int64_t layer, int64_t block, int64_t slot, const float* k, const float* v) {
  float* kb = k_block(layer, block);
  for (int64_t d = 0; d < kv_dim_; ++d) kb[d * block_size_ + slot] = k[d];  // [kv_dim][block_size]
  std::memcpy(this->v(layer, block, slot), v, kv_dim_ * sizeof(float));
}

}  // namespace tinfer

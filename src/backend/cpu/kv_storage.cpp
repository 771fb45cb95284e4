// KvStorage: one huge-page buffer for every layer's K and V blocks, each layer in its own types.
#include "backend/cpu/kv_storage.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstring>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "kernels/kv_quant.h"

namespace tinfer {

KvStorage::KvStorage(const ModelConfig& cfg, int64_t n_blocks, int64_t block_size, const KvPrecision& precision,
                     int64_t n_window_blocks)
    : n_layers_(precision.n_layers()),
      n_blocks_(n_blocks),
      block_size_(block_size),
      n_kv_heads_(cfg.n_kv_heads),
      head_dim_(cfg.head_dim),
      n_window_blocks_(n_window_blocks),
      precision_(precision) {
  check(n_blocks > 0 && block_size > 0, "KV cache needs at least one block of at least one token");
  check(n_window_blocks >= 0, "KV cache: negative window block count");
  check(precision.no_kv.empty() || precision.no_kv.size() == precision.layers.size(),
        "KV precision: no-KV flags for " + std::to_string(precision.no_kv.size()) + " layers, types for " +
            std::to_string(precision.layers.size()));
  check(n_layers_ >= 1 && n_layers_ <= cfg.n_layers, "KV precision names " + std::to_string(n_layers_) +
                                                          " layers but the model has " + std::to_string(cfg.n_layers));
  check(head_dim_ > 0 && head_dim_ <= kKvMaxHeadDim,
        "KV cache: head_dim " + std::to_string(head_dim_) + " outside 1.." + std::to_string(kKvMaxHeadDim));
  check(precision.k_smooth.empty() || precision.n_layers() == int64_t(precision.k_smooth.size()),
        "KV precision: K smoothing for " + std::to_string(precision.k_smooth.size()) + " layers, the model has " +
            std::to_string(n_layers_));
  for (const std::vector<float>& s : precision.k_smooth) {
    check(s.empty() || int64_t(s.size()) == n_kv_heads_ * head_dim_,
          "KV precision: a layer's K smoothing has " + std::to_string(s.size()) + " factors, kv_dim is " +
              std::to_string(n_kv_heads_ * head_dim_));
    for (float f : s) check(std::isfinite(f) && f > 0, "KV precision: K smoothing factors must be positive and finite");
  }
  std::vector<int64_t> offsets, blocks;
  int64_t total = 0;
  for (int64_t l = 0; l < n_layers_; ++l) {
    const KvLayerTypes t = precision.layers[size_t(l)];
    group_.push_back(n_window_blocks_ > 0 && cfg.window(l) > 0 ? 1 : 0);
    blocks.push_back(group_.back() ? n_window_blocks_ : n_blocks_);
    views_.push_back(kv_layer_geometry(t.k, t.v, n_kv_heads_, head_dim_, block_size_));
    if (!precision.has_kv(l)) views_.back().k_block_bytes = views_.back().v_block_bytes = 0;  // skipped attention
    offsets.push_back(total);
    total += blocks.back() * (views_.back().k_block_bytes + views_.back().v_block_bytes);
  }
  buf_ = Buffer(size_t(total), BufferPages::lazy);  // reserved for the worst case, made resident ahead of use
                                                    // (populate_through), 4 KiB pages
  for (int64_t l = 0; l < n_layers_; ++l) {
    KvLayerView& v = views_[size_t(l)];
    if (!precision.has_kv(l)) continue;  // null pointers: nothing reads or writes this layer
    v.k = buf_.data() + offsets[size_t(l)];
    v.v = v.k + blocks[size_t(l)] * v.k_block_bytes;
  }
}

KvLayerView KvStorage::layer_view(int64_t layer) const {
  if (layer < 0 || layer >= n_layers_) fail("KV layer " + std::to_string(layer) + " out of range");
  if (!precision_.has_kv(layer)) fail("KV layer " + std::to_string(layer) + " holds no KV (its attention is skipped)");
  return views_[size_t(layer)];
}

void KvStorage::copy_block(int64_t src, int64_t dst, int group) {
  for (size_t l = 0; l < views_.size(); ++l) {
    const KvLayerView& v = views_[l];
    if (v.k == nullptr || group_[l] != group) continue;  // a layer without KV, or of the other pool
    auto* k = const_cast<uint8_t*>(v.k);
    auto* vv = const_cast<uint8_t*>(v.v);
    std::memcpy(k + dst * v.k_block_bytes, k + src * v.k_block_bytes, size_t(v.k_block_bytes));
    std::memcpy(vv + dst * v.v_block_bytes, vv + src * v.v_block_bytes, size_t(v.v_block_bytes));
  }
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14 (older glibc headers lack it)
#endif

void KvStorage::populate_through(int group, int64_t block, ThreadPool* pool) {
  const int64_t n = group == 1 ? n_window_blocks_ : n_blocks_;
  int64_t& done = populated_[group];
  if (!populate_works_ || block + kPopulateAhead / 2 < done || done >= n) return;
  const int64_t to = std::min(n, std::max(block + 1, done) + kPopulateAhead);
  static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  std::atomic<bool> refused{false};
  auto populate = [&](const uint8_t* base, int64_t block_bytes) {
    const uintptr_t b = uintptr_t(base + done * block_bytes) / page * page;
    const uintptr_t e = (uintptr_t(base + to * block_bytes) + page - 1) / page * page;
    if (e > b && madvise(reinterpret_cast<void*>(b), e - b, MADV_POPULATE_WRITE) != 0) refused = true;
  };
  auto layers = [&](int64_t l0, int64_t l1) {
    for (int64_t l = l0; l < l1; ++l) {
      const KvLayerView& v = views_[size_t(l)];
      if (v.k == nullptr || group_[size_t(l)] != group) continue;
      populate(v.k, v.k_block_bytes);
      populate(v.v, v.v_block_bytes);
    }
  };
  if (pool && pool->size() > 1) pool->parallel_for(n_layers_, 1, layers);
  else layers(0, n_layers_);
  populate_works_ = !refused;
  done = to;
}

void KvStorage::write(int64_t layer, int64_t block, int64_t slot, const float* k, const float* v) {
  const KvLayerView& g = views_[size_t(layer)];
  // (The forward checks has_kv once per layer on its own thread; this runs per token in pool workers.)
  assert(g.k != nullptr);
  kv_write_token(g, n_kv_heads_, head_dim_, const_cast<uint8_t*>(g.k) + block * g.k_block_bytes,
                 const_cast<uint8_t*>(g.v) + block * g.v_block_bytes, slot, k, v);
}

}  // namespace tinfer

// KvPrecision: the element type of every layer's K and of its V, the KV cache's whole storage format.
// A uniform cache is one entry repeated; a calibrated plan (tinfer calibrate-kv) mixes them per layer.
// The block pool, the planner, the storage and the attention calls all size and read through this.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tinfer/kv_dtype.h"

namespace tinfer {

struct KvLayerTypes {
  KvDtype k = KvDtype::f32;
  KvDtype v = KvDtype::f32;
  bool operator==(const KvLayerTypes&) const = default;
};

struct KvPrecision {
  std::vector<KvLayerTypes> layers;  // [n_layers]
  // K smoothing (optional, per layer: empty, or [n_kv_heads * head_dim] positive factors s): K / s is stored
  // and the queries are multiplied by s, so q.k is unchanged while a channel that is large in every token
  // (K's outlier channels) no longer sets every token's quantization scale: per-channel scaling of K on top of
  // the per-token scales, calibrated once (tinfer calibrate-kv --k-smooth). Empty, or one entry per layer.
  std::vector<std::vector<float>> k_smooth;
  // Layers that hold no KV at all (their attention is skipped by a layer-skip plan, tinfer/layer_skip.h): 0 bytes
  // per token, no storage. Empty, or one entry per layer (1 = no KV).
  std::vector<uint8_t> no_kv;

  static KvPrecision uniform(int64_t n_layers, KvDtype k, KvDtype v) {
    return KvPrecision{std::vector<KvLayerTypes>(size_t(n_layers), KvLayerTypes{k, v})};
  }
  static KvPrecision uniform(int64_t n_layers, KvDtype t) { return uniform(n_layers, t, t); }
  bool operator==(const KvPrecision&) const = default;

  int64_t n_layers() const { return int64_t(layers.size()); }
  const float* k_smoothing(int64_t l) const {
    return size_t(l) < k_smooth.size() && !k_smooth[size_t(l)].empty() ? k_smooth[size_t(l)].data() : nullptr;
  }
  bool has_kv(int64_t l) const { return size_t(l) >= no_kv.size() || !no_kv[size_t(l)]; }
  int64_t layers_with_kv() const {
    int64_t n = 0;
    for (int64_t l = 0; l < n_layers(); ++l) n += has_kv(l);
    return n;
  }
  bool is_uniform() const {
    for (const KvLayerTypes& l : layers)
      if (!(l == layers.front())) return false;
    return true;
  }
  // Bytes one token takes in layer l: K and V of every kv head, scales included.
  int64_t layer_bytes_per_token(int64_t l, int64_t n_kv_heads, int64_t head_dim) const {
    if (!has_kv(l)) return 0;
    return n_kv_heads * (kv_head_bytes(layers[size_t(l)].k, head_dim) + kv_head_bytes(layers[size_t(l)].v, head_dim));
  }
  int64_t bytes_per_token(int64_t n_kv_heads, int64_t head_dim) const {
    int64_t b = 0;
    for (int64_t l = 0; l < n_layers(); ++l) b += layer_bytes_per_token(l, n_kv_heads, head_dim);
    return b;
  }
  // "f16" (uniform, K = V), "k=int8 v=int4" (uniform, K != V), "mixed: 20 int8/int8, 2 f16/f16" (per layer,
  // counts in first-seen order).
  std::string describe() const {
    bool smooth = false;
    for (const auto& s : k_smooth) smooth = smooth || !s.empty();
    const int64_t without = n_layers() - layers_with_kv();
    return describe_types() + (smooth ? " +k-smooth" : "") +
           (without > 0 ? " (" + std::to_string(without) + " layers without KV)" : "");
  }
  std::string describe_types() const {
    if (layers.empty()) return "none";
    auto kv = [](const KvLayerTypes& t) {
      return t.k == t.v ? std::string(kv_dtype_name(t.k)) : std::string("k=") + kv_dtype_name(t.k) + " v=" + kv_dtype_name(t.v);
    };
    if (is_uniform()) return kv(layers.front());
    std::vector<std::pair<KvLayerTypes, int>> counts;
    for (const KvLayerTypes& l : layers) {
      bool found = false;
      for (auto& [t, n] : counts)
        if (t == l) ++n, found = true;
      if (!found) counts.push_back({l, 1});
    }
    std::string s = "mixed:";
    for (size_t i = 0; i < counts.size(); ++i)
      s += (i ? ", " : " ") + std::to_string(counts[i].second) + " " + kv_dtype_name(counts[i].first.k) + "/" +
           kv_dtype_name(counts[i].first.v);
    return s;
  }
};

}  // namespace tinfer

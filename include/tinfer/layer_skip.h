// LayerSkip: which decoder sub-blocks a forward leaves out (calibrated layer skipping, tinfer calibrate-skip):
// per layer, the attention block (norm, QKV, RoPE/KV write, attention, output projection, its residual add)
// and/or the MLP block (norm, gate/up, SwiGLU, down, its residual add). A skipped block adds nothing to the
// residual stream; a layer whose attention is skipped writes and reads no KV. Plain data; empty = skip nothing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tinfer {

struct LayerSkip {
  std::vector<uint8_t> attn, mlp;  // [n_layers] each, 1 = skipped; or empty

  static LayerSkip none(int64_t n_layers) {
    return {std::vector<uint8_t>(size_t(n_layers), 0), std::vector<uint8_t>(size_t(n_layers), 0)};
  }
  bool skips_attn(int64_t l) const { return size_t(l) < attn.size() && attn[size_t(l)]; }
  bool skips_mlp(int64_t l) const { return size_t(l) < mlp.size() && mlp[size_t(l)]; }
  int64_t count() const {
    int64_t n = 0;
    for (uint8_t a : attn) n += a;
    for (uint8_t m : mlp) n += m;
    return n;
  }
  bool empty() const { return count() == 0; }
  bool operator==(const LayerSkip&) const = default;
  // "none" or "attn 3,7; mlp 7" (layer indices).
  std::string describe() const {
    auto list = [](const std::vector<uint8_t>& v) {
      std::string s;
      for (size_t l = 0; l < v.size(); ++l)
        if (v[l]) s += (s.empty() ? "" : ",") + std::to_string(l);
      return s;
    };
    const std::string a = list(attn), m = list(mlp);
    if (a.empty() && m.empty()) return "none";
    return (a.empty() ? "" : "attn " + a) + (a.empty() || m.empty() ? "" : "; ") + (m.empty() ? "" : "mlp " + m);
  }
};

}  // namespace tinfer

// Rotary position embedding for both pair layouts, from a precomputed cos/sin table.
#pragma once
#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace tinfer {

class RopeTable {
 public:
  RopeTable() = default;
  // Tables for positions [0, n_positions), computed once here: apply() runs on many threads at once
  // and never writes (a table grown on demand raced with its readers).
  // local: the windowed layers' RoPE (ModelConfig::rope_base_swa, unscaled, no factors) instead of the global one.
  // LongRoPE's long factors when n_positions is beyond the original context (rope_params).
  RopeTable(const ModelConfig& cfg, int64_t n_positions, bool local = false);
  int64_t n_positions() const { return n_pos_; }
  // Rotates `n_heads` heads of `head_dim` floats laid out back to back, at position `pos`
  // (0 <= pos < n_positions(): callers check once per batch, see CpuForward::forward).
  void apply(float* x, int64_t n_heads, int64_t pos) const;

 private:
  int64_t head_dim_ = 0, rope_dim_ = 0;
  double base_ = 10000, scale_ = 1, attn_factor_ = 1;
  std::vector<float> factors_;  // ModelConfig::rope_freq_factors (or _long)
  RopeLayout layout_ = RopeLayout::interleaved;
  std::vector<float> cos_, sin_;  // [pos][rope_dim/2]
  int64_t n_pos_ = 0;
};

// Reference rotation in double precision (the test oracle), same layouts; freq_factors: rope_dim / 2 divisors of
// the angles (Llama 3 scaling) or nullptr.
// The RoPE parameters of a layer (the local ones where ModelConfig::local_rope(l)) in a forward that positions up
// to n_positions tokens (LongRoPE: the long factors beyond the original context).
struct RopeParams {
  double base = 10000, scale = 1;
  const float* freq_factors = nullptr;  // rope_dim / 2 divisors, or nullptr
  double attn_factor = 1;               // cos and sin scaled by it (LongRoPE)
};
RopeParams rope_params(const ModelConfig& cfg, bool local, int64_t n_positions);

void rope_reference(double* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, int64_t pos, double base,
                    double scale, RopeLayout layout, const float* freq_factors = nullptr, double attn_factor = 1);

// Llama 3's RoPE scaling ("rope_type": "llama3" in config.json) as per-frequency divisors, the values llama.cpp's
// converter stores in rope_freqs.weight: wavelengths shorter than original_ctx / high_freq_factor keep their
// frequency, longer than original_ctx / low_freq_factor are divided by `factor`, and those between blend smoothly.
std::vector<float> llama3_rope_factors(double factor, double low_freq_factor, double high_freq_factor,
                                       double original_ctx, double base, int64_t rope_dim);

}  // namespace tinfer

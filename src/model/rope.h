// Rotary position embedding for both pair layouts, from a precomputed cos/sin table.
#pragma once
#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace tinfer {

class RopeTable {
 public:
  RopeTable() = default;
  explicit RopeTable(const ModelConfig& cfg);
  // Rotates `n_heads` heads of `head_dim` floats laid out back to back, at position `pos`.
  void apply(float* x, int64_t n_heads, int64_t pos) const;

 private:
  void grow(int64_t n_pos) const;
  int64_t head_dim_ = 0, rope_dim_ = 0;
  double base_ = 10000, scale_ = 1;
  RopeLayout layout_ = RopeLayout::interleaved;
  mutable std::vector<float> cos_, sin_;  // [pos][rope_dim/2]; grown on demand (positions beyond ctx_len)
  mutable int64_t n_pos_ = 0;
};

// Reference rotation in double precision (the test oracle), same layouts.
void rope_reference(double* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, int64_t pos, double base,
                    double scale, RopeLayout layout);

}  // namespace tinfer

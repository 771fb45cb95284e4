// Early exit's price in weight bytes read per decode token (decode is bandwidth-bound, so bytes ~ time): a token
// that runs every layer reads them all, the head, and every exit head on the way; one that exits after e layers
// reads the layers before e, the exit heads up to e, and the QKV projections of every deeper layer (state
// copying fills their K and V). Pure arithmetic, so calibrate-exit's choice can be tested.
#pragma once
#include <cstdint>
#include <vector>

#include "tinfer/early_exit.h"

namespace tinfer {

struct ExitCostModel {
  std::vector<double> layer_bytes;  // [n_layers] kept sub-blocks of each layer
  std::vector<double> qkv_bytes;    // [n_layers] QKV projection of each layer
  double head_bytes = 0;
  double full() const;  // a decode token without early exit
  // Mean bytes per decode token with exit layers `layers` when `c` (eligible rows, exits by layer) is what happened.
  double mean(const std::vector<int32_t>& layers, const EarlyExitCounters& c) const;
};

}  // namespace tinfer

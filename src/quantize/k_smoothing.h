// K smoothing for a quantized KV cache: per-channel factors s (KvPrecision::k_smooth) calibrated on text, on a
// model run in float by a backend of its own (`tinfer calibrate-kv`). The statistics, the factors' formula and
// the collection on any backend are in backend/k_smoothing_stats.h; the load-time default in
// backend/k_smoothing_at_load.h.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/k_smoothing_stats.h"

namespace tinfer {

class Model;

struct KSmoothOptions {
  int64_t max_tokens = 4096;  // calibration tokens, in windows of ctx from position 0
  int64_t ctx = 512;
  double alpha = 1.0;
  double floor = 0.05;
  int threads = 0;
};

QkAbsMax collect_qk_absmax(const Model& model, const std::vector<int32_t>& tokens, const KSmoothOptions& opts);

}  // namespace tinfer

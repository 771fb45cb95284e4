// What calibrate-skip and calibrate-exit share: the model loaded as it is served, its backend asked for the
// capabilities the search needs (layer skip, early exit, the observer), and the quality probe against the base.
// The commands fill ctx / calib / probe in their own order (exit checks its layers before any work).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "cli/common.h"
#include "core/timer.h"
#include "tinfer/kv_precision.h"
#include "quality/kv_quality_probe.h"
#include "quality/quality_budget.h"

namespace tinfer::cli {

struct ProbeRun {
  QualityBudget budget;
  double t0 = now_s();
  Loaded l;
  Backend* fwd = nullptr;  // the loaded backend, with the capabilities asked for
  int64_t L = 0, ctx = 0;
  std::vector<int32_t> calib;
  std::unique_ptr<KvQualityProbe> probe;
  KvPrecision f32;  // every measurement's KV cache: the budget is against what the plan changes, nothing else

  ProbeRun(const Args& args, const QualityBudget& b, std::initializer_list<BackendCapability> caps, const char* command)
      : budget(b), l(load_model(args)) {
    fwd = &backend_with(l, caps, command);
    L = l.model->config().n_layers;
  }
};

}  // namespace tinfer::cli

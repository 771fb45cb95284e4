// The batching policy for a mode: one line each.
#include "engine/batching_policy.h"

namespace tinfer {

std::unique_ptr<BatchingPolicy> make_batching_policy(BatchingMode mode) {
  switch (mode) {
    case BatchingMode::kStatic:
      return std::make_unique<StaticBatching>();
    case BatchingMode::kStaticPadded:
      return std::make_unique<PaddedStaticBatching>();
    case BatchingMode::kContinuous:
      break;
  }
  return std::make_unique<ContinuousBatching>();
}

}  // namespace tinfer

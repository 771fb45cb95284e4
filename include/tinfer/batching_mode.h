// BatchingMode: which batching policy the engine runs (engine/batching_policy.h has the policies).
// A plain enum for the public API; names are parsed once, at the edge (CLI flags, JSON).
#pragma once
#include <string_view>

namespace tinfer {

enum class BatchingMode {
  kContinuous,    // waiting requests join every step; finished ones leave at once
  kStatic,        // baseline: a batch forms when idle and runs until its longest member ends
  kStaticPadded,  // baseline: as kStatic, finished members computed as padding (fixed-shape tensors)
};

inline const char* batching_mode_name(BatchingMode m) {
  switch (m) {
    case BatchingMode::kStatic:
      return "static";
    case BatchingMode::kStaticPadded:
      return "static-padded";
    case BatchingMode::kContinuous:
      break;
  }
  return "continuous";
}

// "continuous" | "static" | "static-padded"; false for anything else.
inline bool parse_batching_mode(std::string_view s, BatchingMode* out) {
  for (BatchingMode m : {BatchingMode::kContinuous, BatchingMode::kStatic, BatchingMode::kStaticPadded})
    if (s == batching_mode_name(m)) return *out = m, true;
  return false;
}

}  // namespace tinfer

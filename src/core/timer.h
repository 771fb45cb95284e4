// Monotonic wall-clock timing helpers.
#pragma once
#include <chrono>

namespace tinfer {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace tinfer

// Monotonic wall-clock timing helpers, and durations as people read them in messages.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

namespace tinfer {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 10 -> "10 s", 2.5 -> "2.5 s", 0.125 -> "0.125 s" (shortest of up to 6 significant digits, never "10.000000").
inline std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g s", s);
  return b;
}

}  // namespace tinfer

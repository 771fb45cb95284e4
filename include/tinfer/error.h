// Errors: one exception type for every failure a user can cause (bad files, bad arguments).
// Messages name the problem precisely; callers at the edge (CLI, server) print them and exit/return 4xx.
#pragma once
#include <stdexcept>
#include <string>

namespace tinfer {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

[[noreturn]] inline void fail(const std::string& msg) { throw Error(msg); }

inline void check(bool ok, const std::string& msg) {
  if (!ok) fail(msg);
}
// A literal message builds no std::string unless it fails (the per-step checks stay allocation-free); a message
// assembled with + is built before the call, so hot paths write `if (!ok) fail(a + b)` instead.
inline void check(bool ok, const char* msg) {
  if (!ok) fail(msg);
}

}  // namespace tinfer

// FNV-1a, 64 bits: fingerprints against mix-ups (a model's identity, the packed-weight cache's key and its
// sampled contents), not against an adversary.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tinfer {

class Fnv1a64 {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * 0x100000001b3ull;
  }
  void u64(uint64_t v) {
    uint8_t le[8];
    for (int i = 0; i < 8; ++i) le[i] = uint8_t(v >> (8 * i));
    bytes(le, 8);
  }
  void str(std::string_view s) { u64(s.size()), bytes(s.data(), s.size()); }
  uint64_t value() const { return h_; }
  std::string hex() const {  // 16 lower-case hex digits
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h_));
    return b;
  }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace tinfer

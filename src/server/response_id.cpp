// Unpredictable response ids (response_id.h).
#include "server/response_id.h"

#include <array>
#include <cstdio>

namespace tinfer::server {

ResponseIds::ResponseIds() {
  std::random_device rd;  // the OS's entropy; 256 bits of it seed the generator's whole state
  std::array<std::random_device::result_type, 8> words{};
  for (auto& w : words) w = rd();
  std::seed_seq seq(words.begin(), words.end());
  gen_.seed(seq);
}

std::string ResponseIds::next(std::string_view prefix) {
  unsigned long long x = 0;
  {
    std::lock_guard<std::mutex> lk(mu_);
    x = gen_();
  }
  char b[24];
  std::snprintf(b, sizeof b, "%016llx", x);
  return std::string(prefix) + b;
}

}  // namespace tinfer::server

// Stop-string matching over a held-back tail: O(len(text) * stops * max_stop_len) per push, tiny
// next to a decode step.
#include "server/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace tinfer::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const auto& s : stops_) max_len_ = std::max(max_len_, s.size());
}

std::string StopMatcher::push(std::string_view text) {
  if (matched_) return "";
  held_ += text;
  if (stops_.empty()) return std::exchange(held_, std::string());
  // Earliest full match wins (a stop must not leak text that another, earlier stop would cut).
  size_t best = std::string::npos;
  for (const auto& s : stops_) best = std::min(best, held_.find(s));
  if (best != std::string::npos) {
    matched_ = true;
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    for (size_t k = std::min(s.size() - 1, held_.size()); k > keep; --k) {
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  if (matched_) return "";
  return std::exchange(held_, std::string());
}

}  // namespace tinfer::server

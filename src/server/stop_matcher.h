// Stop strings on streamed text: text is released only once it cannot be the start of a stop string,
// so a stop split across tokens is still caught and never shown. The matched text is dropped.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace tinfer::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends decoded text; returns the part that is now safe to emit. After a match, returns the text
  // before the stop and matched() becomes true; later pushes return "".
  std::string push(std::string_view text);
  // End of generation: whatever was held back (a partial stop that never completed).
  std::string flush();
  bool matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  size_t max_len_ = 0;
  std::string held_;  // tail that may still grow into a stop string
  bool matched_ = false;
};

}  // namespace tinfer::server

#include "text/tool_calls/marker_text.h"

namespace tinfer::toolcall {

MarkerText::MarkerText(std::vector<std::string> markers, bool fences) : markers_(std::move(markers)), fences_(fences) {}

int MarkerText::match() const {
  for (size_t i = 0; i < markers_.size(); ++i)
    if (tail_ == markers_[i]) return static_cast<int>(i);
  return -1;
}

bool MarkerText::is_prefix() const {
  for (const auto& m : markers_)
    if (tail_.size() < m.size() && m.compare(0, tail_.size(), tail_) == 0) return true;
  return false;
}

int MarkerText::feed(char c, std::string& out) {
  dropped_.clear();
  if (fences_) {
    if (c == '`') {
      ++ticks_;
    } else {
      if (ticks_ >= 3) in_fence_ = !in_fence_;
      ticks_ = 0;
    }
  }
  if (skip_) {
    if (is_space(c)) return -1;
    skip_ = false;
  }
  if (in_fence_ || (fences_ && c == '`')) {
    out += space_ + tail_ + c;
    space_.clear(), tail_.clear();
    return -1;
  }
  tail_ += c;
  // Shorten the held tail from the front until it is (a prefix of) a marker; what falls off is content, except
  // whitespace, which waits in space_ for the next content byte (or is dropped before a marker).
  while (!tail_.empty()) {
    if (int m = match(); m >= 0) {
      dropped_ = std::move(space_);
      space_.clear(), tail_.clear();
      return m;
    }
    if (is_prefix()) break;
    char h = tail_.front();
    tail_.erase(0, 1);
    if (is_space(h)) {
      space_ += h;
    } else {
      out += space_;
      out += h;
      space_.clear();
    }
  }
  return -1;
}

void MarkerText::flush(std::string& out) {
  out += space_ + tail_;
  space_.clear(), tail_.clear();
}

ExpectLiteral::Result ExpectLiteral::feed(char c) {
  held_ += c;
  if (n_ == 0 && is_space(c)) {
    space_ = held_.size();
    return Result::kMore;
  }
  if (n_ < literal_.size() && c == literal_[n_]) return ++n_ == literal_.size() ? Result::kMatched : Result::kMore;
  return Result::kMismatch;
}

}  // namespace tinfer::toolcall

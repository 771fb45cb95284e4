// Text between calls, one byte at a time: passes content through, finds a call's start marker outside ``` code
// fences, and withholds only what may still become a marker (a partial marker and the whitespace before it, which
// is dropped when the marker completes: whitespace next to a call is not content).
#pragma once
#include <string>
#include <vector>

namespace tinfer::toolcall {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class MarkerText {
 public:
  // Markers must not start with whitespace or a backtick. `fences`: a marker inside ``` … ``` is content.
  explicit MarkerText(std::vector<std::string> markers, bool fences = true);
  // One byte: decided content goes to `out`; returns the index of the marker this byte completed, else -1. When a
  // marker completes, the whitespace held before it is available from dropped_space() until the next feed.
  int feed(char c, std::string& out);
  void flush(std::string& out);        // everything held goes out (end of output)
  void skip_space() { skip_ = true; }  // drop whitespace until the next other byte (just after a call)
  const std::string& dropped_space() const { return dropped_; }
  bool holding() const { return !space_.empty() || !tail_.empty(); }

 private:
  int match() const;       // index of the marker equal to tail_, or -1
  bool is_prefix() const;  // tail_ is a proper prefix of a marker

  std::vector<std::string> markers_;
  bool fences_, in_fence_ = false, skip_ = false;
  int ticks_ = 0;
  std::string space_, tail_, dropped_;
};

// A fixed closing text (e.g. "</tool_call>") that may follow after whitespace; fed one byte at a time.
class ExpectLiteral {
 public:
  enum class Result { kMore, kMatched, kMismatch };
  explicit ExpectLiteral(std::string literal) : literal_(std::move(literal)) {}
  Result feed(char c);
  void reset() { held_.clear(), n_ = 0, space_ = 0; }
  // After kMismatch (or at the end): the bytes held past the leading whitespace, the mismatching byte included.
  std::string rest() const { return held_.substr(space_); }

 private:
  std::string literal_, held_;
  size_t n_ = 0, space_ = 0;
};

}  // namespace tinfer::toolcall

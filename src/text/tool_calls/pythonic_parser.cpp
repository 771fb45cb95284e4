// Pythonic (Llama 3.2 / 4, ToolACE …): the answer starts with a list of calls, [f(a=1, b="x"), g()], optionally
// inside <|python_start|> … <|python_end|>; text after the list is content. The list is withheld until its ']'
// (a bracket tracker rejects a non-call early: "[1, 2]" or "[see below]" are content at once), then converted
// whole: each call goes out as one delta holding id, name and all its arguments.
#include "text/tool_calls/byte_parser.h"
#include "text/tool_calls/marker_text.h"
#include "text/tool_calls/python_literal.h"

namespace tinfer::toolcall {
namespace {

constexpr std::string_view kStartTag = "<|python_start|>";
constexpr std::string_view kEndTag = "<|python_end|>";

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9') || c == '.'; }

// Finds the end of "[name(…), …]" byte by byte, failing as soon as the text cannot be such a list.
class ListTracker {
 public:
  enum class Result { kMore, kDone, kFail };
  Result feed(char c) {
    switch (phase_) {
      case Phase::kOpen:
        if (c != '[') return Result::kFail;
        phase_ = Phase::kNameStart;
        return Result::kMore;
      case Phase::kNameStart:
        if (is_space(c)) return Result::kMore;
        if (!ident_start(c)) return Result::kFail;
        phase_ = Phase::kName;
        return Result::kMore;
      case Phase::kName:
        if (ident_char(c)) return Result::kMore;
        if (is_space(c)) {
          phase_ = Phase::kAfterName;
          return Result::kMore;
        }
        [[fallthrough]];
      case Phase::kAfterName:
        if (is_space(c)) return Result::kMore;
        if (c != '(') return Result::kFail;
        stack_.clear();
        stack_.push_back('(');
        phase_ = Phase::kArgs;
        return Result::kMore;
      case Phase::kArgs:
        return args(c);
      case Phase::kBetween:
        if (is_space(c)) return Result::kMore;
        if (c == ',') {
          phase_ = Phase::kNameStart;
          return Result::kMore;
        }
        return c == ']' ? Result::kDone : Result::kFail;
    }
    return Result::kFail;
  }

 private:
  enum class Phase { kOpen, kNameStart, kName, kAfterName, kArgs, kBetween };
  Result args(char c) {
    if (quote_) {
      if (escape_)
        escape_ = false;
      else if (c == '\\')
        escape_ = true;
      else if (c == quote_)
        quote_ = 0;
      return Result::kMore;
    }
    if (c == '"' || c == '\'') {
      quote_ = c;
    } else if (c == '(' || c == '[' || c == '{') {
      if (stack_.size() > 64) return Result::kFail;
      stack_ += c;
    } else if (c == ')' || c == ']' || c == '}') {
      char open = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (stack_.back() != open) return Result::kFail;
      stack_.pop_back();
      if (stack_.empty()) phase_ = Phase::kBetween;
    }
    return Result::kMore;
  }

  Phase phase_ = Phase::kOpen;
  std::string stack_;
  char quote_ = 0;
  bool escape_ = false;
};

class PythonicParser final : public ByteParser {
  enum class State { kStart, kStartTag, kList, kAfterList, kEndTag, kPlain };

  void step(char c, ParseDelta& out) override {
    switch (state_) {
      case State::kStart:
        held_ += c;
        if (is_space(c)) return;
        if (c == '[') return list_byte(c, out);
        if (c != kStartTag[0]) return plain(out);
        tag_ = 1;
        state_ = State::kStartTag;
        return;
      case State::kStartTag:
        held_ += c;
        if (tag_ == kStartTag.size()) {
          if (is_space(c)) return;
          if (c == '[') return list_byte(c, out);
          return plain(out);
        }
        if (c != kStartTag[tag_++]) return plain(out);
        return;
      case State::kList:
        held_ += c;
        return list_byte(c, out);
      case State::kAfterList:  // whitespace and a closing <|python_end|> are dropped; the rest is content
        if (is_space(c)) return;
        if (c == kEndTag[0]) {
          held_.assign(1, c);
          tag_ = 1;
          state_ = State::kEndTag;
          return;
        }
        out.content += c;
        state_ = State::kPlain;
        return;
      case State::kEndTag:
        held_ += c;
        if (c != kEndTag[tag_]) return plain(out);
        if (++tag_ == kEndTag.size()) {
          held_.clear();
          state_ = State::kAfterList;
        }
        return;
      case State::kPlain:
        out.content += c;
        return;
    }
  }

  void list_byte(char c, ParseDelta& out) {
    if (state_ != State::kList) {
      state_ = State::kList;
      list_start_ = held_.size() - 1;
    }
    auto r = tracker_.feed(c);
    if (r == ListTracker::Result::kFail) return plain(out);
    if (r == ListTracker::Result::kMore) return;
    auto calls = parse_python_calls(std::string_view(held_).substr(list_start_));
    if (!calls) return plain(out);
    for (auto& call : *calls) {
      int index = open_call(out, call.name);
      add_piece(out, index, call.arguments);
      close_call(index, std::move(call.arguments));
    }
    held_.clear();
    state_ = State::kAfterList;
  }

  void plain(ParseDelta& out) {
    out.content += held_;
    held_.clear();
    state_ = State::kPlain;
  }

  void end(ParseDelta& out) override {
    if (state_ != State::kAfterList) out.content += held_;
    held_.clear();
    state_ = State::kPlain;
  }

  State state_ = State::kStart;
  size_t tag_ = 0, list_start_ = 0;
  ListTracker tracker_;
  std::string held_;
};

}  // namespace

std::unique_ptr<ToolCallParser> make_pythonic_parser() { return std::make_unique<PythonicParser>(); }

}  // namespace tinfer::toolcall

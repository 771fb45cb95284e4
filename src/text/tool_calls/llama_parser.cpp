// Llama 3.x JSON: the answer *is* the call(s), {"name": "f", "parameters": {...}}, with or without a leading
// <|python_tag|>, several separated by ';'. Only the start of the output can open a call: an answer that begins
// with anything else is plain content to the end (a JSON answer that is not a call shows itself at its first key).
#include <optional>

#include "text/tool_calls/byte_parser.h"
#include "text/tool_calls/marker_text.h"

namespace tinfer::toolcall {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

class Llama3JsonParser final : public JsonCallParser {
  enum class State { kStart, kTag, kObject, kAfterObject, kPlain };

  void step(char c, ParseDelta& out) override {
    switch (state_) {
      case State::kStart:  // leading whitespace, then <|python_tag|> or '{'
        raw_ += c;
        if (is_space(c)) return;
        if (c == '{') return open_object(c, out);
        if (c == kPythonTag[0]) {
          tag_ = 1;
          state_ = State::kTag;
          return;
        }
        return plain(out);
      case State::kTag:
        raw_ += c;
        if (tag_ < kPythonTag.size()) {
          if (c != kPythonTag[tag_]) return plain(out);
          ++tag_;
          return;
        }
        if (is_space(c)) return;
        if (c == '{') return open_object(c, out);
        return plain(out);
      case State::kObject: {
        auto st = call_->feed(c, out, *this);
        raw_ += c;
        if (st == CallObjectReader::Status::kError) return plain(out);
        if (st == CallObjectReader::Status::kDone) {
          state_ = State::kAfterObject;
          raw_.clear();
        }
        return;
      }
      case State::kAfterObject:  // whitespace, then ';' or the next '{', else the rest is content
        raw_ += c;
        if (is_space(c) || c == ';') return;
        if (c == '{') return open_object(c, out);
        raw_.assign(1, c);
        return plain(out);
      case State::kPlain:
        out.content += c;
        return;
    }
  }

  void end(ParseDelta& out) override {
    if (state_ != State::kAfterObject && state_ != State::kPlain) out.content += raw_;
    raw_.clear();
    state_ = State::kPlain;
  }

  void open_object(char c, ParseDelta& out) {
    state_ = State::kObject;
    call_.emplace(/*strict_keys=*/true);
    call_->feed(c, out, *this);
  }
  // Everything held is content, and so is the rest of the output.
  void plain(ParseDelta& out) {
    out.content += raw_;
    raw_.clear();
    call_.reset();
    state_ = State::kPlain;
  }

  State state_ = State::kStart;
  size_t tag_ = 0;
  std::optional<JsonCall> call_;
  std::string raw_;  // held text: leading whitespace and tag, or the call being read
};

}  // namespace

std::unique_ptr<ToolCallParser> make_llama3_json_parser() { return std::make_unique<Llama3JsonParser>(); }

}  // namespace tinfer::toolcall

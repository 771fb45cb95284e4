// Hermes / Qwen2.5 / Qwen3: <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>, any number of them, with
// content around them. A call object is valid once it closes; the closing tag is optional (a model that stops or
// starts the next call without it loses nothing).
#include <optional>

#include "text/tool_calls/byte_parser.h"
#include "text/tool_calls/marker_text.h"

namespace tinfer::toolcall {
namespace {

class HermesParser final : public JsonCallParser {
  enum class State { kText, kBeforeObject, kObject, kAfterObject };

  void step(char c, ParseDelta& out) override {
    switch (state_) {
      case State::kText:
        if (text_.feed(c, out.content) >= 0) {
          state_ = State::kBeforeObject;
          raw_ = text_.dropped_space() + "<tool_call>";
        }
        return;
      case State::kBeforeObject:
        if (is_space(c)) {
          raw_ += c;
          return;
        }
        if (c != '{') return abandon(c, out);
        call_.emplace();
        state_ = State::kObject;
        [[fallthrough]];
      case State::kObject: {
        auto st = call_->feed(c, out, *this);
        if (st == CallObjectReader::Status::kError) return abandon(c, out);
        raw_ += c;
        if (st == CallObjectReader::Status::kDone) {
          state_ = State::kAfterObject;
          close_.reset();
        }
        return;
      }
      case State::kAfterObject:
        switch (close_.feed(c)) {
          case ExpectLiteral::Result::kMore:
            return;
          case ExpectLiteral::Result::kMatched:
            return to_text();
          case ExpectLiteral::Result::kMismatch: {
            to_text();
            for (char r : close_.rest()) step(r, out);
            return;
          }
        }
    }
  }

  void end(ParseDelta& out) override {
    if (state_ == State::kBeforeObject || state_ == State::kObject) out.content += raw_;  // an unfinished call
    if (state_ == State::kAfterObject) {
      std::string rest = close_.rest();  // a partial closing tag is content; whitespace after a call is not
      out.content += rest;
    }
    text_.flush(out.content);
    state_ = State::kText;
  }

  // Not (or no longer) a valid call: what it consumed is content, and `c` is scanned again as text.
  void abandon(char c, ParseDelta& out) {
    out.content += raw_;
    state_ = State::kText;
    call_.reset();
    step(c, out);
  }
  void to_text() {
    state_ = State::kText;
    call_.reset();
    text_.skip_space();
  }

  State state_ = State::kText;
  MarkerText text_{{"<tool_call>"}};
  ExpectLiteral close_{"</tool_call>"};
  std::optional<JsonCall> call_;
  std::string raw_;  // the text of the call being read, from its marker on
};

}  // namespace

std::unique_ptr<ToolCallParser> make_hermes_parser() { return std::make_unique<HermesParser>(); }

}  // namespace tinfer::toolcall

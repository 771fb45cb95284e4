// Mistral: [TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...] (v0.3 templates), and the newer
// [TOOL_CALLS]f[ARGS]{...} (optionally f[CALL_ID]id[ARGS]{...}), one marker per call. Content may come before.
// Ids are 9 alphanumerics: the Mistral templates refuse a follow-up turn whose tool_call_id has another length.
#include <optional>

#include "text/tool_calls/byte_parser.h"
#include "text/tool_calls/marker_text.h"

namespace tinfer::toolcall {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

class MistralParser final : public JsonCallParser {
 public:
  MistralParser() {
    id_chars_ = 9;
    id_prefix_ = false;
  }

 private:
  enum class State {
    kText,
    kHead,
    kItem,
    kObject,
    kSeparator,
    kName,
    kBracket,
    kCallId,
    kArgsStart,
    kArgs,
    kAfterList
  };

  void step(char c, ParseDelta& out) override {
    if (state_ == State::kText) {
      if (text_.feed(c, out.content) >= 0) {
        state_ = State::kHead;
        raw_ = text_.dropped_space() + "[TOOL_CALLS]";
      }
      return;
    }
    if (state_ == State::kAfterList) {  // whitespace after the list is dropped; the next byte is text again
      if (is_space(c)) return;
      to_text();
      return step(c, out);
    }
    if (!call_step(c, out)) {
      out.content += raw_;
      to_text();
      step(c, out);
    }
  }

  // One byte inside the call section; false when it breaks it (then `c` is not consumed).
  bool call_step(char c, ParseDelta& out) {
    switch (state_) {
      case State::kHead:
        if (is_space(c)) break;
        if (c == '[') {
          state_ = State::kItem;
          break;
        }
        if (!is_name_char(c)) return false;
        name_.assign(1, c);
        state_ = State::kName;
        break;
      case State::kItem:  // the list's first object, or the next after ','
        if (is_space(c)) break;
        if (c != '{') return false;
        call_.emplace();
        state_ = State::kObject;
        [[fallthrough]];
      case State::kObject: {
        auto st = call_->feed(c, out, *this);
        if (st == CallObjectReader::Status::kError) return false;
        if (st == CallObjectReader::Status::kDone) {
          state_ = State::kSeparator;
          raw_.clear();  // complete calls are not content again if the list breaks later
          return true;
        }
        break;
      }
      case State::kSeparator:
        if (is_space(c)) break;
        if (c == ',') {
          state_ = State::kItem;
        } else if (c == ']') {
          state_ = State::kAfterList;
          return true;
        } else {
          return false;
        }
        break;
      default:
        return name_step(c, out);
    }
    raw_ += c;
    return true;
  }

  // The [TOOL_CALLS]name[CALL_ID]id[ARGS]{...} form.
  bool name_step(char c, ParseDelta& out) {
    switch (state_) {
      case State::kName:
        if (c == '[') {
          bracket_.assign(1, c);
          state_ = State::kBracket;
        } else if (is_name_char(c)) {
          name_ += c;
        } else {
          return false;
        }
        break;
      case State::kBracket:
        bracket_ += c;
        if (bracket_ == "[ARGS]") {
          state_ = State::kArgsStart;
        } else if (bracket_ == "[CALL_ID]") {
          state_ = State::kCallId;
        } else if (std::string_view("[CALL_ID]").starts_with(bracket_) ||
                   std::string_view("[ARGS]").starts_with(bracket_)) {
        } else {
          return false;
        }
        break;
      case State::kCallId:
        if (c == '[') {
          bracket_.assign(1, c);
          state_ = State::kBracket;
        } else if (!is_name_char(c)) {
          return false;
        }
        break;
      case State::kArgsStart:
        if (is_space(c)) break;
        if (c != '{') return false;
        index_ = sink_open(out, name_);
        scan_ = JsonScanner();
        args_.clear();
        state_ = State::kArgs;
        [[fallthrough]];
      case State::kArgs: {
        auto st = scan_.feed(c);
        if (st == JsonScanner::Status::kError) return false;
        args_ += c;
        sink_piece(out, index_, std::string_view(&c, 1));
        if (st == JsonScanner::Status::kDone) {
          sink_close(index_, std::move(args_));
          raw_.clear();
          state_ = State::kAfterList;
          return true;
        }
        break;
      }
      default:
        return false;
    }
    raw_ += c;
    return true;
  }

  void end(ParseDelta& out) override {
    if (state_ != State::kText && state_ != State::kAfterList) out.content += raw_;
    text_.flush(out.content);
    to_text();
  }

  void to_text() {
    bool after_call = state_ == State::kAfterList;
    state_ = State::kText;
    call_.reset();
    raw_.clear();
    if (after_call) text_.skip_space();
  }

  State state_ = State::kText;
  MarkerText text_{{"[TOOL_CALLS]"}};
  std::optional<JsonCall> call_;
  JsonScanner scan_;
  std::string raw_, name_, bracket_, args_;
  int index_ = -1;
};

}  // namespace

std::unique_ptr<ToolCallParser> make_mistral_parser() { return std::make_unique<MistralParser>(); }

}  // namespace tinfer::toolcall

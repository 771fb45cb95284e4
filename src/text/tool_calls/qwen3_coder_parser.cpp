// Qwen3-Coder XML:
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n…</function>\n</tool_call>
// (a call that starts at <function= without <tool_call> is read too). A value loses one newline on each side and
// is JSON if it parses as JSON, else a string, unless set_tools() declared the parameter a string. The call opens
// at <function=NAME>; each </parameter> streams one member ('{"key": value' then ', "key": value'), </function>
// the closing '}'.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "text/tool_calls/byte_parser.h"
#include "text/tool_calls/marker_text.h"

namespace tinfer::toolcall {
namespace {

constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr size_t kMaxName = 256;

std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class Qwen3CoderParser final : public ByteParser {
 public:
  void set_tools(const nlohmann::json& tools) override {
    string_params_.clear();
    if (!tools.is_array()) return;
    for (const auto& t : tools) {
      const auto& f = t.contains("function") ? t["function"] : t;
      if (!f.is_object() || !f.contains("name") || !f["name"].is_string()) continue;
      auto props = f.contains("parameters") && f["parameters"].is_object()
                       ? f["parameters"].value("properties", nlohmann::json::object())
                       : nlohmann::json::object();
      if (!props.is_object()) continue;
      for (const auto& [key, schema] : props.items())
        if (schema.is_object() && schema.value("type", nlohmann::json()) == "string")
          string_params_.push_back(f["name"].get<std::string>() + '\n' + key);
    }
  }

 private:
  enum class State { kText, kWantFunction, kName, kBody, kParamName, kValue, kAfterFunction };

  void step(char c, ParseDelta& out) override {
    if (state_ == State::kText) {
      int m = text_.feed(c, out.content);
      if (m < 0) return;
      raw_ = text_.dropped_space() + (m == 0 ? "<tool_call>" : std::string(kFunction));
      wrapped_ = m == 0;
      tag_.clear();
      state_ = m == 0 ? State::kWantFunction : State::kName;
      name_.clear();
      return;
    }
    if (state_ == State::kAfterFunction) {
      switch (close_.feed(c)) {
        case ExpectLiteral::Result::kMore:
          return;
        case ExpectLiteral::Result::kMatched:
          return to_text();
        case ExpectLiteral::Result::kMismatch:
          to_text();
          for (char r : close_.rest()) step(r, out);
          return;
      }
    }
    if (!call_step(c, out)) {
      out.content += raw_;
      state_ = State::kText;
      step(c, out);
      return;
    }
    raw_ += c;
  }

  // A tag being matched byte by byte: true while `tag_` is still a prefix of `want`.
  bool grow(char c, std::string_view want) {
    tag_ += c;
    return want.starts_with(tag_);
  }

  bool call_step(char c, ParseDelta& out) {
    switch (state_) {
      case State::kWantFunction:
        if (tag_.empty() && is_space(c)) return true;
        if (!grow(c, kFunction)) return false;
        if (tag_.size() == kFunction.size()) state_ = State::kName;
        return true;
      case State::kName:
        if (c == '>' && !name_.empty()) {
          index_ = open_call(out, name_);
          args_.clear();
          tag_.clear();
          state_ = State::kBody;
          return true;
        }
        if (c == '<' || c == '>' || c == '\n' || name_.size() >= kMaxName) return false;
        name_ += c;
        return true;
      case State::kBody:
        return body_step(c, out);
      case State::kParamName:
        if (c == '>' && !key_.empty()) {
          value_.clear();
          state_ = State::kValue;
          return true;
        }
        if (c == '<' || c == '>' || c == '\n' || key_.size() >= kMaxName) return false;
        key_ += c;
        return true;
      case State::kValue:
        value_ += c;
        if (value_.ends_with(kParameterEnd)) {
          value_.resize(value_.size() - kParameterEnd.size());
          member(out);
          tag_.clear();
          state_ = State::kBody;
        }
        return true;
      default:
        return false;
    }
  }

  // Between members: <parameter=KEY> or </function>.
  bool body_step(char c, ParseDelta& out) {
    if (tag_.empty() && is_space(c)) return true;
    tag_ += c;
    bool param = kParameter.starts_with(tag_), end = kFunctionEnd.starts_with(tag_);
    if (!param && !end) return false;
    if (param && tag_.size() == kParameter.size()) {
      key_.clear();
      state_ = State::kParamName;
    } else if (end && tag_.size() == kFunctionEnd.size()) {
      std::string piece = args_.empty() ? "{}" : "}";
      args_ += piece;
      add_piece(out, index_, piece);
      close_call(index_, std::move(args_));
      if (wrapped_) {
        close_.reset();
        state_ = State::kAfterFunction;
      } else {
        to_text();
      }
    }
    return true;
  }

  void member(ParseDelta& out) {
    std::string_view v = value_;
    if (v.starts_with('\n')) v.remove_prefix(1);
    if (v.ends_with('\n')) v.remove_suffix(1);
    bool as_string =
        std::find(string_params_.begin(), string_params_.end(), name_ + '\n' + key_) != string_params_.end();
    std::string value;
    if (!as_string) {
      auto j = nlohmann::ordered_json::parse(v, nullptr, false);
      if (!j.is_discarded()) value = dump(j);
    }
    if (value.empty()) value = dump(nlohmann::ordered_json(std::string(v)));
    std::string piece = (args_.empty() ? "{" : ", ") + dump(nlohmann::ordered_json(key_)) + ": " + value;
    args_ += piece;
    add_piece(out, index_, piece);
  }

  void to_text() {
    state_ = State::kText;
    raw_.clear();
    text_.skip_space();
  }

  void end(ParseDelta& out) override {
    if (state_ == State::kAfterFunction)
      out.content += close_.rest();
    else if (state_ != State::kText)
      out.content += raw_;
    text_.flush(out.content);
    state_ = State::kText;
  }

  State state_ = State::kText;
  MarkerText text_{{"<tool_call>", std::string(kFunction)}};
  ExpectLiteral close_{"</tool_call>"};
  bool wrapped_ = false;
  int index_ = -1;
  std::string raw_, tag_, name_, key_, value_, args_;
  std::vector<std::string> string_params_;  // "function\nparameter" of parameters declared "type": "string"
};

}  // namespace

std::unique_ptr<ToolCallParser> make_qwen3_coder_parser() { return std::make_unique<Qwen3CoderParser>(); }

}  // namespace tinfer::toolcall

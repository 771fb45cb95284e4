#include "text/tool_calls/call_object.h"

#include <nlohmann/json.hpp>

namespace tinfer::toolcall {
namespace {
using St = JsonScanner::State;

// A JSON string's text ("…" with escapes) decoded; nullopt if it is not one.
std::optional<std::string> decode_string(const std::string& raw) {
  auto j = nlohmann::json::parse(raw, nullptr, false);
  if (!j.is_string()) return std::nullopt;
  return j.get<std::string>();
}

bool is_args_key(const std::string& k) { return k == "arguments" || k == "parameters"; }
}  // namespace

void CallObjectReader::start_value(char c) {
  cap_ = Capture::kValue;
  raw_.assign(1, c);
  if (is_args_key(key_) && !args_done_ && !in_args_) {
    in_args_ = true;
    args_object_ = c == '{';
    if (args_object_) pending_ += c;
  }
}

void CallObjectReader::end_value() {
  cap_ = Capture::kNone;
  if (key_ == "name" && !have_name_) {
    auto s = decode_string(raw_);
    if (s && !s->empty()) {
      name_ = std::move(*s);
      have_name_ = true;
    } else {
      bad_ = true;
    }
  } else if (in_args_) {
    in_args_ = false;
    args_done_ = true;
    args_ = raw_;
  }
}

CallObjectReader::Status CallObjectReader::feed(char c) {
  St before = scan_.state();
  int depth = scan_.depth();
  auto st = scan_.feed(c);
  if (st == JsonScanner::Status::kError || bad_) return Status::kError;
  bool ended_number = scan_.number_ended() && depth == 1;
  if (ended_number && cap_ == Capture::kValue) end_value();  // the number ended before this byte
  if (cap_ == Capture::kKey) {
    raw_ += c;
    if (scan_.state() == St::kColon) {
      key_ = decode_string(raw_).value_or("");
      cap_ = Capture::kNone;
      if (strict_ && key_ != "name" && key_ != "type" && !is_args_key(key_)) return Status::kError;
    }
  } else if (cap_ == Capture::kValue) {
    raw_ += c;
    if (in_args_ && args_object_) pending_ += c;
    if (scan_.depth() == 1 && scan_.state() == St::kCommaOrEnd) end_value();
  } else if (!ended_number && depth == 1 && !JsonScanner::is_space(c)) {
    if ((before == St::kKeyOrEnd || before == St::kKey) && c == '"') {
      cap_ = Capture::kKey;
      raw_.assign(1, c);
    } else if (before == St::kValue) {
      start_value(c);
    }
  }
  if (bad_) return Status::kError;
  return st == JsonScanner::Status::kDone ? Status::kDone : Status::kMore;
}

std::optional<std::string> CallObjectReader::arguments() const {
  if (!have_name_ || bad_) return std::nullopt;
  if (!args_done_ || args_ == "null") return std::string("{}");
  if (args_object_) return args_;
  // Arguments written as a JSON string that holds an object.
  auto s = decode_string(args_);
  if (!s) return std::nullopt;
  auto j = nlohmann::json::parse(*s, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  return *s;
}

}  // namespace tinfer::toolcall

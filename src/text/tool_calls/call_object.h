// One JSON call object as it streams: {"name": "f", "arguments": {...}} ("parameters" is read as "arguments", as
// Llama writes it). Once the name is known and the arguments object has begun, the call can be opened and the
// arguments' bytes flow out as they are scanned, exactly as written; other shapes (name after the arguments,
// arguments as a JSON string holding an object, no arguments) are resolved when the object closes.
#pragma once
#include <optional>
#include <string>
#include <utility>

#include "text/tool_calls/json_scan.h"

namespace tinfer::toolcall {

class CallObjectReader {
 public:
  enum class Status { kMore, kDone, kError };
  // strict_keys: any key but name / arguments / parameters / type is an error (Llama: a bare JSON answer is not a
  // call; Llama 3.x sometimes writes {"type": "function", "name": …}).
  explicit CallObjectReader(bool strict_keys = false) : strict_(strict_keys) {}
  Status feed(char c);
  // The name is known and the arguments are an object being (or already) written: the caller may open the call.
  bool can_open() const { return have_name_ && args_object_ && (in_args_ || args_done_); }
  const std::string& name() const { return name_; }
  // Argument bytes scanned since the last call (only while can_open(); the caller streams them).
  std::string take_pending() { return std::exchange(pending_, std::string()); }
  // At kDone: the call's arguments (a JSON object as text), or nullopt when the object is not a valid call.
  std::optional<std::string> arguments() const;

 private:
  void start_value(char c);
  void end_value();

  JsonScanner scan_;
  bool strict_;
  enum class Capture { kNone, kKey, kValue } cap_ = Capture::kNone;
  std::string raw_, key_;  // the key or value being captured; the last key
  std::string name_, args_, pending_;
  bool have_name_ = false, bad_ = false;
  bool in_args_ = false, args_done_ = false, args_object_ = false;
};

}  // namespace tinfer::toolcall

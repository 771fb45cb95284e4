// The shape every parser here shares: a state machine fed one byte at a time, so a chunk boundary can never change a
// decision (push() of any split of a text gives the same concatenated deltas as one push of the whole).
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "text/tool_calls/call_object.h"
#include "text/tool_calls/tool_call.h"

namespace tinfer::toolcall {

class ByteParser : public ToolCallParser {
 public:
  ParseDelta push(std::string_view text) final {
    ParseDelta out;
    for (char c : text) step(c, out);
    return out;
  }
  ParseDelta finish() final {
    ParseDelta out;
    end(out);
    return out;
  }

 protected:
  virtual void step(char c, ParseDelta& out) = 0;
  virtual void end(ParseDelta& out) = 0;
};

// A ByteParser whose calls are opened, streamed and recorded through these (JsonCall uses them).
class JsonCallParser : public ByteParser {
 public:
  int sink_open(ParseDelta& out, const std::string& name) { return open_call(out, name, id_chars_, id_prefix_); }
  void sink_piece(ParseDelta& out, int index, std::string_view piece) { add_piece(out, index, piece); }
  void sink_close(int index, std::string arguments) { close_call(index, std::move(arguments)); }

 protected:
  size_t id_chars_ = 24;
  bool id_prefix_ = true;
};

// Drives a CallObjectReader for one call: opens the call as soon as the reader can, streams its argument bytes,
// and records it when the object closes. Returns the reader's status (kError: the object is not a valid call).
class JsonCall {
 public:
  explicit JsonCall(bool strict_keys = false) : reader_(strict_keys) {}
  CallObjectReader::Status feed(char c, ParseDelta& out, JsonCallParser& p);
  bool opened() const { return index_ >= 0; }

 private:
  CallObjectReader reader_;
  int index_ = -1;
};

std::unique_ptr<ToolCallParser> make_hermes_parser();
std::unique_ptr<ToolCallParser> make_llama3_json_parser();
std::unique_ptr<ToolCallParser> make_mistral_parser();
std::unique_ptr<ToolCallParser> make_pythonic_parser();
std::unique_ptr<ToolCallParser> make_qwen3_coder_parser();

}  // namespace tinfer::toolcall

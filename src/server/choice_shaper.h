// One chat choice's text split the way the client reads it: reasoning (<think>…</think>) into reasoning_content,
// tool calls into tool_calls (the model's tool-call format, text/tool_calls/), the rest into content. Fed the text
// SampleOutput lets out (stop strings already cut), in pieces as it streams.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "text/tool_calls/tool_call.h"
#include "text/tool_calls/tool_call_format.h"

namespace tinfer::server {

class ChoiceShaper {
 public:
  // format: the tool-call format, or null (no tools to parse); reasoning: the model reasons in <think> blocks
  // (opens_reasoning: its prompt already opened one). tools_json: the request's tools (typed parsing) or "".
  ChoiceShaper(const toolcall::ToolCallFormat* format, bool reasoning, bool opens_reasoning,
               const std::string& tools_json, bool legacy);

  toolcall::ParseDelta push(const std::string& text);  // what the client may be sent now
  toolcall::ParseDelta finish();                       // the end of the output: the rest

  const std::string& content() const { return content_; }
  const std::string& reasoning() const { return reasoning_; }
  const std::vector<toolcall::ToolCall>& calls() const { return parser_->calls(); }
  bool legacy() const { return legacy_; }  // answered as message.function_call
  // The finish reason the client sees: "tool_calls" ("function_call" for legacy requests) when the output stopped
  // after making calls.
  std::string finish_reason(const std::string& sample_reason) const;

 private:
  toolcall::ParseDelta keep(toolcall::ParseDelta d);

  std::unique_ptr<toolcall::ToolCallParser> parser_;
  bool legacy_;
  std::string content_, reasoning_;
};

}  // namespace tinfer::server

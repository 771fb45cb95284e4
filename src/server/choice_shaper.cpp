// ChoiceShaper: the reasoning parser in front of the tool-call parser (text/tool_calls/reasoning.h).
#include "server/choice_shaper.h"

#include <nlohmann/json.hpp>

#include "text/tool_calls/reasoning.h"

namespace tinfer::server {

ChoiceShaper::ChoiceShaper(const toolcall::ToolCallFormat* format, bool reasoning, bool opens_reasoning,
                           const std::string& tools_json, bool legacy)
    : legacy_(legacy) {
  std::unique_ptr<toolcall::ToolCallParser> tools = format ? format->make_parser() : nullptr;
  if (tools && !tools_json.empty()) tools->set_tools(nlohmann::json::parse(tools_json));
  parser_ = reasoning ? toolcall::reasoning_then_tools(opens_reasoning, std::move(tools)) : std::move(tools);
}

toolcall::ParseDelta ChoiceShaper::keep(toolcall::ParseDelta d) {
  content_ += d.content;
  reasoning_ += d.reasoning;
  return d;
}

toolcall::ParseDelta ChoiceShaper::push(const std::string& text) {
  if (!parser_) return keep({text, "", {}});
  return keep(parser_->push(text));
}

toolcall::ParseDelta ChoiceShaper::finish() { return parser_ ? keep(parser_->finish()) : toolcall::ParseDelta{}; }

std::string ChoiceShaper::finish_reason(const std::string& sample_reason) const {
  if (sample_reason == "stop" && parser_ && !parser_->calls().empty()) return legacy_ ? "function_call" : "tool_calls";
  return sample_reason;
}

}  // namespace tinfer::server

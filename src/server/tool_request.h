// Tool-calling fields of a chat body: "tools" (validated, key order kept for the template), "tool_choice",
// "parallel_tool_calls", and the legacy "functions" / "function_call" (read as tools, answered as function_call).
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "text/tool_calls/tool_call.h"

namespace tinfer::server {

constexpr int kMaxTools = 128;  // OpenAI's limit

struct ToolRequest {
  std::string tools_json;  // the OpenAI "tools" array as JSON text ("" when none), in the client's key order
  toolcall::ToolChoice choice{toolcall::ToolChoice::Mode::kNone, "", true};
  bool legacy = false;       // came as "functions": the answer carries message.function_call (one call)
  bool parse() const { return !tools_json.empty() && choice.mode != toolcall::ToolChoice::Mode::kNone; }
  bool enforce() const {
    return choice.mode == toolcall::ToolChoice::Mode::kRequired || choice.mode == toolcall::ToolChoice::Mode::kNamed;
  }
};

// Throws ApiError naming the field. raw_body: the body's text for the key order ("" = `body`).
ToolRequest parse_tool_request(const nlohmann::json& body, std::string_view raw_body);

}  // namespace tinfer::server

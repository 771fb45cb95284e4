// Tool-call request checks and streamed shapes found by the end-to-end script (test_server_tools.py):
// a function whose parameters are not an object schema, and legacy function_call deltas when the model
// writes a second call.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/openai_response.h"
#include "server/tool_request.h"

namespace tinfer::server {
namespace {

using json = nlohmann::json;

std::string refused_param(const char* body) {
  try {
    parse_tool_request(json::parse(body), body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.param;
  }
  return "<accepted>";
}

TEST(ToolRequest, ParametersMustBeAnObjectSchema) {
  // A call's arguments are an object in every format: {"type": "array"} could only ever be text, even when forced.
  EXPECT_EQ(refused_param(R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}],
                              "tool_choice": "required"})"),
            "tools[0].function.parameters");
  EXPECT_EQ(refused_param(R"({"functions": [{"name": "f", "parameters": {"type": "string"}}]})"),
            "functions[0].parameters");
  EXPECT_EQ(refused_param(R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}},
                                        {"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}},
                                        {"type": "function", "function": {"name": "h"}}]})"),
            "<accepted>");
}

TEST(ShapedChunk, LegacyFunctionCallCarriesOnlyTheFirstCall) {
  ResponseMeta m;
  m.chat = true;
  toolcall::ParseDelta d;
  d.calls = {{0, "call_a", "f", "{\"x\": 1}"}, {1, "call_b", "g", "{\"y\""}};
  json c = shaped_chunk(m, 0, d, nullptr, "", /*legacy=*/true);
  EXPECT_EQ(c["choices"][0]["delta"]["function_call"], json({{"name", "f"}, {"arguments", "{\"x\": 1}"}}));
  d.calls = {{1, "", "", ": 2}"}};  // later pieces of the second call: nothing to send
  c = shaped_chunk(m, 0, d, nullptr, "function_call", true);
  EXPECT_FALSE(c["choices"][0]["delta"].contains("function_call"));
  EXPECT_EQ(c["choices"][0]["finish_reason"], "function_call");
  // Not legacy: both calls, each with its index; id, type and name only in a call's first piece.
  d.calls = {{0, "call_a", "f", "{}"}, {1, "", "", "{\"y\""}};
  c = shaped_chunk(m, 0, d, nullptr, "", false);
  const json& calls = c["choices"][0]["delta"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], json({{"index", 0}, {"id", "call_a"}, {"type", "function"}, {"function", {{"arguments", "{}"}, {"name", "f"}}}}));
  EXPECT_EQ(calls[1], json({{"index", 1}, {"function", {{"arguments", "{\"y\""}}}}));
}

}  // namespace
}  // namespace tinfer::server

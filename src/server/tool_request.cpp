// parse_tool_request: tools and functions checked one by one (each error names its path), then the choice.
#include "server/tool_request.h"

#include <nlohmann/json.hpp>
#include <set>

#include "server/api_error.h"

namespace tinfer::server {
namespace {

using json = nlohmann::ordered_json;
using Mode = toolcall::ToolChoice::Mode;

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw ApiError(400, "'" + field + "' " + what, field, "invalid_value");
}

// OpenAI: a name of a-z, A-Z, 0-9, _ and -, at most 64 characters.
void check_name(const json& n, const std::string& field) {
  if (!n.is_string()) bad(field, "is required: the function's name");
  const std::string s = n.get<std::string>();
  if (s.empty() || s.size() > 64 || s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
                                        std::string::npos)
    bad(field, "must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -, got " + n.dump());
}

// One function definition {name, description?, parameters?, strict?}.
void check_function(const json& f, const std::string& at) {
  if (!f.is_object()) bad(at, "must be an object with a 'name'");
  check_name(f.contains("name") ? f["name"] : json(), at + ".name");
  if (f.contains("description") && !f["description"].is_null() && !f["description"].is_string())
    bad(at + ".description", "must be a string");
  if (f.contains("parameters") && !f["parameters"].is_null() && !f["parameters"].is_object())
    bad(at + ".parameters", "must be a JSON Schema object");
}

// tools -> the array itself; functions (legacy) -> the same array in the tools shape.
json read_tools(const json& body, bool* legacy) {
  json tools = json::array();
  if (body.contains("tools") && !body["tools"].is_null()) {
    const json& t = body["tools"];
    if (!t.is_array()) bad("tools", "must be a list of tool definitions");
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string at = "tools[" + std::to_string(i) + "]";
      if (!t[i].is_object()) bad(at, "must be an object");
      if (!t[i].contains("type") || t[i]["type"] != "function")
        bad(at + ".type", "must be \"function\" (the only tool type served)");
      if (!t[i].contains("function")) bad(at + ".function", "is required");
      check_function(t[i]["function"], at + ".function");
    }
    tools = t;
  }
  if (body.contains("functions") && !body["functions"].is_null() && !body["functions"].empty()) {
    if (!tools.empty()) bad("functions", "cannot be combined with 'tools' (functions is their legacy form)");
    const json& f = body["functions"];
    if (!f.is_array()) bad("functions", "must be a list of function definitions");
    for (size_t i = 0; i < f.size(); ++i) {
      check_function(f[i], "functions[" + std::to_string(i) + "]");
      tools.push_back(json{{"type", "function"}, {"function", f[i]}});
    }
    *legacy = true;
  }
  if (tools.size() > size_t(kMaxTools))
    bad(*legacy ? "functions" : "tools", "may hold at most " + std::to_string(kMaxTools) + " tools, got " +
                                             std::to_string(tools.size()));
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i)
    if (!names.insert(tools[i]["function"]["name"].get<std::string>()).second)
      bad(*legacy ? "functions" : "tools", "names the function '" + tools[i]["function"]["name"].get<std::string>() +
                                                "' twice");
  return tools;
}

// "none" | "auto" | "required" | {"type": "function", "function": {"name"}} (legacy: {"name"}).
toolcall::ToolChoice read_choice(const json& v, const char* field, bool legacy, const json& tools) {
  toolcall::ToolChoice c;
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "none") c.mode = Mode::kNone;
    else if (s == "auto") c.mode = Mode::kAuto;
    else if (s == "required" && !legacy) c.mode = Mode::kRequired;
    else bad(field, legacy ? "must be \"none\", \"auto\" or {\"name\": ...}" : "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  } else if (v.is_object()) {
    const json* name = nullptr;
    if (legacy && v.contains("name")) name = &v["name"];
    else if (!legacy && v.contains("function") && v["function"].is_object() && v["function"].contains("name"))
      name = &v["function"]["name"];
    if (!legacy && (!v.contains("type") || v["type"] != "function")) bad(std::string(field) + ".type", "must be \"function\"");
    if (!name) bad(field, "must name a function");
    check_name(*name, std::string(field) + (legacy ? ".name" : ".function.name"));
    c.mode = Mode::kNamed;
    c.name = name->get<std::string>();
    bool found = false;
    for (const auto& t : tools) found = found || t["function"]["name"] == c.name;
    if (!found) bad(field, "names '" + c.name + "', which is not among the tools");
  } else {
    bad(field, "must be a string or an object");
  }
  if (c.mode != Mode::kNone && tools.empty()) bad(field, "asks for a tool call but no tools are given");
  return c;
}

}  // namespace

ToolRequest parse_tool_request(const nlohmann::json& sorted, std::string_view raw_body) {
  ToolRequest r;
  const bool any = (sorted.contains("tools") && !sorted["tools"].is_null()) ||
                   (sorted.contains("functions") && !sorted["functions"].is_null()) ||
                   (sorted.contains("tool_choice") && !sorted["tool_choice"].is_null()) ||
                   (sorted.contains("function_call") && !sorted["function_call"].is_null());
  if (!any) return r;
  const json body = raw_body.empty() ? json::parse(sorted.dump()) : json::parse(raw_body);
  const json tools = read_tools(body, &r.legacy);
  const char* field = r.legacy ? "function_call" : "tool_choice";
  if (r.legacy && body.contains("tool_choice") && !body["tool_choice"].is_null())
    bad("tool_choice", "cannot be combined with 'functions' (use 'tools')");
  if (body.contains(field) && !body[field].is_null())
    r.choice = read_choice(body[field], field, r.legacy, tools);
  else
    r.choice.mode = tools.empty() ? Mode::kNone : Mode::kAuto;
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null()) {
    if (!body["parallel_tool_calls"].is_boolean()) bad("parallel_tool_calls", "must be a boolean");
    r.choice.parallel = body["parallel_tool_calls"].get<bool>();
  }
  if (r.legacy) r.choice.parallel = false;  // function_call is one call
  if (!tools.empty()) r.tools_json = tools.dump();
  return r;
}

}  // namespace tinfer::server

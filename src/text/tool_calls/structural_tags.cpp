// Structural tags for the formats whose calls are a begin string naming the function, the arguments, and an end
// string: hermes, llama3_json, mistral (inside its [TOOL_CALLS] [...] list) and qwen3_coder (arguments in
// xgrammar's "qwen_xml" style, <parameter=KEY>VALUE</parameter>). The begin strings are the exact text the
// templates write for an assistant's tool call, so a forced call looks like one the model has seen.
#include "text/tool_calls/structural_tags.h"

namespace tinfer::toolcall::stag {

std::vector<Function> functions(const Json& tools, const ToolChoice& choice) {
  std::vector<Function> out;
  if (!tools.is_array()) return out;
  for (const auto& t : tools) {
    const Json& f = t.contains("function") ? t["function"] : t;
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string()) continue;
    std::string name = f["name"].get<std::string>();
    if (choice.mode == ToolChoice::Mode::kNamed && name != choice.name) continue;
    Json params = f.contains("parameters") && f["parameters"].is_object() ? f["parameters"] : Json{{"type", "object"}};
    out.push_back({std::move(name), std::move(params)});
  }
  return out;
}

std::string escaped(const std::string& s) {
  std::string q = Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
  return q.substr(1, q.size() - 2);
}

Json tag(const std::string& begin, Json content, const std::string& end) {
  return {{"type", "tag"}, {"begin", begin}, {"content", std::move(content)}, {"end", end}};
}
Json json_schema(const Json& schema, const char* style) {
  return {{"type", "json_schema"}, {"json_schema", schema}, {"style", style}};
}
Json const_string(const std::string& value) { return {{"type", "const_string"}, {"value", value}}; }
Json sequence(std::vector<Json> elements) { return {{"type", "sequence"}, {"elements", std::move(elements)}}; }

Json tags_with_separator(std::vector<Json> tags, const std::string& separator, bool parallel) {
  return {{"type", "tags_with_separator"},
          {"tags", std::move(tags)},
          {"separator", separator},
          {"at_least_one", true},
          {"stop_after_first", !parallel}};
}

Json triggered_tags(std::vector<std::string> triggers, std::vector<Json> tags, bool parallel) {
  return {{"type", "triggered_tags"},
          {"triggers", std::move(triggers)},
          {"tags", std::move(tags)},
          {"at_least_one", false},
          {"stop_after_first", !parallel}};
}

std::string wrap(const Json& format) { return Json{{"type", "structural_tag"}, {"format", format}}.dump(); }

namespace {

// One call's text: begin_prefix + NAME + begin_suffix, arguments, end.
struct CallShape {
  std::string begin_prefix, begin_suffix, end;
  const char* style = "json";
  std::string separator;  // between parallel calls
  std::string trigger;    // what starts a call in free text (kAuto)
};

std::vector<Json> call_tags(const std::vector<Function>& fns, const CallShape& s) {
  std::vector<Json> tags;
  for (const auto& f : fns)
    tags.push_back(tag(s.begin_prefix + escaped(f.name) + s.begin_suffix, json_schema(f.parameters, s.style), s.end));
  return tags;
}

// The formats whose calls stand alone in the text (hermes, llama3_json, qwen3_coder).
std::string plain_calls(const Json& tools, const ToolChoice& choice, const CallShape& s) {
  if (choice.mode == ToolChoice::Mode::kNone) return "";
  auto fns = functions(tools, choice);
  if (fns.empty()) return "";
  auto tags = call_tags(fns, s);
  switch (choice.mode) {
    case ToolChoice::Mode::kNamed:
      return wrap(tags.front());
    case ToolChoice::Mode::kRequired:
      return wrap(tags_with_separator(std::move(tags), s.separator, choice.parallel));
    default:
      return wrap(triggered_tags({s.trigger}, std::move(tags), choice.parallel));
  }
}

}  // namespace

std::string hermes(const Json& tools, const ToolChoice& choice) {
  return plain_calls(
      tools, choice,
      {"<tool_call>\n{\"name\": \"", "\", \"arguments\": ", "}\n</tool_call>", "json", "\n", "<tool_call>"});
}

std::string llama3_json(const Json& tools, const ToolChoice& choice) {
  return plain_calls(tools, choice, {"{\"name\": \"", "\", \"parameters\": ", "}", "json", "; ", "{\"name\": "});
}

std::string qwen3_coder(const Json& tools, const ToolChoice& choice) {
  return plain_calls(tools, choice,
                     {"<tool_call>\n<function=", ">\n", "</function>\n</tool_call>", "qwen_xml", "\n", "<tool_call>"});
}

// [TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...]: the calls are tags inside one list.
std::string mistral(const Json& tools, const ToolChoice& choice) {
  if (choice.mode == ToolChoice::Mode::kNone) return "";
  auto fns = functions(tools, choice);
  if (fns.empty()) return "";
  const std::string open = "[TOOL_CALLS] [", close = "]";
  auto tags = call_tags(fns, {"{\"name\": \"", "\", \"arguments\": ", "}"});
  if (choice.mode == ToolChoice::Mode::kNamed)
    return wrap(sequence({const_string(open), tags.front(), const_string(close)}));
  Json list = tags_with_separator(std::move(tags), ", ", choice.parallel);
  if (choice.mode == ToolChoice::Mode::kRequired)
    return wrap(sequence({const_string(open), list, const_string(close)}));
  return wrap(triggered_tags({"[TOOL_CALLS]"}, {tag(open, list, close)}, choice.parallel));
}

}  // namespace tinfer::toolcall::stag

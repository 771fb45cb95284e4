// The structural-tag builders of the format table (tool_call_format.cpp), one per family, and the pieces they share.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "text/tool_calls/tool_call.h"

namespace tinfer::toolcall::stag {

// Ordered: a schema's property order is what xgrammar enforces (and pythonic's keyword order), so it must survive.
using Json = nlohmann::ordered_json;

struct Function {
  std::string name;
  Json parameters;  // a JSON schema; {"type": "object"} when the tool gives none
};

// The functions `choice` allows: all of `tools` (kRequired, kAuto) or the named one (kNamed; empty if absent).
std::vector<Function> functions(const Json& tools, const ToolChoice& choice);
// A JSON string's body (no quotes) for splicing a name into a literal begin string.
std::string escaped(const std::string& s);

Json tag(const std::string& begin, Json content, const std::string& end);
Json json_schema(const Json& schema, const char* style = "json");
Json const_string(const std::string& value);
Json sequence(std::vector<Json> elements);
// kRequired: separated tags, at least one, only one unless parallel.
Json tags_with_separator(std::vector<Json> tags, const std::string& separator, bool parallel);
// kAuto: free text; a trigger starts one of `tags`.
Json triggered_tags(std::vector<std::string> triggers, std::vector<Json> tags, bool parallel);
std::string wrap(const Json& format);  // {"type": "structural_tag", "format": format}

std::string hermes(const Json& tools, const ToolChoice& choice);
std::string llama3_json(const Json& tools, const ToolChoice& choice);
std::string mistral(const Json& tools, const ToolChoice& choice);
std::string pythonic(const Json& tools, const ToolChoice& choice);
std::string qwen3_coder(const Json& tools, const ToolChoice& choice);

}  // namespace tinfer::toolcall::stag

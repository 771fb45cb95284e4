// parse_output_format: a table of the fields that ask for a grammar, each with its reader.
#include "server/output_format.h"

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace tinfer::server {
namespace {

using json = nlohmann::ordered_json;  // key order kept: a schema's property order is the output's
using grammar::GrammarKind;
using grammar::GrammarSpec;

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw ApiError(400, "'" + field + "' " + what, field, "invalid_value");
}

// A schema given as an object, or as JSON text (vLLM takes both for guided_json).
std::string schema_text(const json& v, const std::string& field) {
  if (v.is_object() || v.is_boolean()) return v.dump();
  if (v.is_string()) {
    try {
      return json::parse(v.get<std::string>()).dump();
    } catch (const json::exception&) {
      bad(field, "must be a JSON Schema (an object, or a string holding one)");
    }
  }
  bad(field, "must be a JSON Schema (an object, or a string holding one)");
}

std::string nonempty_string(const json& v, const std::string& field) {
  if (!v.is_string() || v.get<std::string>().empty()) bad(field, "must be a non-empty string");
  return v.get<std::string>();
}

// As many as a schema's enum may hold (src/grammar/schema_check.cpp): 50,000 choices compile for 8 s here.
constexpr size_t kMaxChoices = 8192;

std::string choices(const json& v, const std::string& field) {
  if (!v.is_array() || v.empty()) bad(field, "must be a non-empty list of strings");
  if (v.size() > kMaxChoices) bad(field, "may hold at most " + std::to_string(kMaxChoices) + " choices");
  for (size_t i = 0; i < v.size(); ++i)
    if (!v[i].is_string() || v[i].get<std::string>().empty())
      bad(field + "[" + std::to_string(i) + "]", "must be a non-empty string");
  return v.dump();
}

// OpenAI: {"type": "text" | "json_object" | "json_schema", "json_schema": {"name", "schema", "strict"}}.
// llama-server also takes {"type": "json_object", "schema": {...}}.
std::optional<GrammarSpec> response_format(const json& v) {
  if (!v.is_object()) bad("response_format", "must be an object with a 'type'");
  auto t = v.find("type");
  if (t == v.end() || !t->is_string()) bad("response_format.type", "is required: \"text\", \"json_object\" or \"json_schema\"");
  const std::string type = t->get<std::string>();
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    if (auto s = v.find("schema"); s != v.end() && !s->is_null())
      return GrammarSpec{GrammarKind::kJsonSchema, schema_text(*s, "response_format.schema")};
    return GrammarSpec{GrammarKind::kJsonObject, ""};
  }
  if (type != "json_schema")
    bad("response_format.type", "must be \"text\", \"json_object\" or \"json_schema\", got " + t->dump());
  auto js = v.find("json_schema");
  if (js == v.end() || !js->is_object()) bad("response_format.json_schema", "is required with type \"json_schema\"");
  if (auto n = js->find("name"); n != js->end() && !n->is_string()) bad("response_format.json_schema.name", "must be a string");
  if (auto st = js->find("strict"); st != js->end() && !st->is_null() && !st->is_boolean())
    bad("response_format.json_schema.strict", "must be a boolean");
  auto s = js->find("schema");
  if (s == js->end() || s->is_null())  // OpenAI requires it; without it any JSON object is the closest reading
    return GrammarSpec{GrammarKind::kJsonObject, ""};
  return GrammarSpec{GrammarKind::kJsonSchema, schema_text(*s, "response_format.json_schema.schema")};
}

// vLLM's structured_outputs: {"json" | "regex" | "choice" | "grammar" | "json_object" | "structural_tag": ...}.
std::optional<GrammarSpec> structured_outputs(const json& v) {
  if (!v.is_object()) bad("structured_outputs", "must be an object");
  std::optional<GrammarSpec> out;
  auto set = [&](const char* key, GrammarSpec g) {
    if (out) bad("structured_outputs", "must hold one of json, regex, choice, grammar, json_object, structural_tag");
    out = std::move(g);
    (void)key;
  };
  for (const auto& [k, x] : v.items()) {
    if (x.is_null()) continue;
    const std::string f = "structured_outputs." + k;
    if (k == "json") set("json", {GrammarKind::kJsonSchema, schema_text(x, f)});
    else if (k == "regex") set("regex", {GrammarKind::kRegex, nonempty_string(x, f)});
    else if (k == "choice") set("choice", {GrammarKind::kChoice, choices(x, f)});
    else if (k == "grammar") set("grammar", {GrammarKind::kEbnf, nonempty_string(x, f)});
    else if (k == "json_object") {
      if (!x.is_boolean()) bad(f, "must be a boolean");
      if (x.get<bool>()) set("json_object", {GrammarKind::kJsonObject, ""});
    } else if (k == "structural_tag") {
      set("structural_tag", {GrammarKind::kStructuralTag, x.is_string() ? x.get<std::string>() : x.dump()});
    } else if (k != "disable_fallback" && k != "disable_any_whitespace" && k != "disable_additional_properties" &&
               k != "whitespace_pattern") {
      throw ApiError(400, "'" + f + "' is not supported by this server", f, "unsupported_parameter");
    }
  }
  return out;
}

enum Where { kCompletions = 1, kChat = 2, kBoth = 3 };
struct FormatField {
  const char* name;
  Where where;
  std::optional<GrammarSpec> (*read)(const json& v);
};

const FormatField kFormatFields[] = {
    {"response_format", kBoth, response_format},
    {"structured_outputs", kBoth, structured_outputs},
    {"guided_json", kBoth, [](const json& v) -> std::optional<GrammarSpec> {
       return GrammarSpec{GrammarKind::kJsonSchema, schema_text(v, "guided_json")};
     }},
    {"guided_regex", kBoth, [](const json& v) -> std::optional<GrammarSpec> {
       return GrammarSpec{GrammarKind::kRegex, nonempty_string(v, "guided_regex")};
     }},
    {"guided_choice", kBoth, [](const json& v) -> std::optional<GrammarSpec> {
       return GrammarSpec{GrammarKind::kChoice, choices(v, "guided_choice")};
     }},
    {"guided_grammar", kBoth, [](const json& v) -> std::optional<GrammarSpec> {
       return GrammarSpec{GrammarKind::kEbnf, nonempty_string(v, "guided_grammar")};
     }},
    // llama-server's names.
    {"json_schema", kBoth, [](const json& v) -> std::optional<GrammarSpec> {
       return GrammarSpec{GrammarKind::kJsonSchema, schema_text(v, "json_schema")};
     }},
    {"grammar", kBoth, [](const json& v) -> std::optional<GrammarSpec> {
       if (v.is_string() && v.get<std::string>().empty()) return std::nullopt;  // llama-server's "no grammar"
       return GrammarSpec{GrammarKind::kEbnf, nonempty_string(v, "grammar")};
     }},
};

}  // namespace

std::optional<OutputFormat> parse_output_format(const nlohmann::json& body, bool chat, std::string_view raw_body) {
  const Where here = chat ? kChat : kCompletions;
  std::optional<OutputFormat> out;
  std::optional<json> ordered;  // the body again with its key order, parsed only when a format field is present
  for (const FormatField& f : kFormatFields) {
    if (!(f.where & here)) continue;
    auto present = body.find(f.name);
    if (present == body.end() || present->is_null()) continue;
    if (!ordered) ordered = raw_body.empty() ? json::parse(body.dump()) : json::parse(raw_body);
    std::optional<GrammarSpec> g = f.read(ordered->at(f.name));
    if (!g) continue;
    if (out)
      throw ApiError(400, "'" + out->field + "' and '" + f.name + "' both ask for structured output; give one",
                     f.name, "invalid_value");
    out = OutputFormat{std::move(*g), f.name};
  }
  return out;
}

}  // namespace tinfer::server

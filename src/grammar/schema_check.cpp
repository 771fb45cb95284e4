// check_schema_supported: a walk over every subschema position of a JSON Schema.
#include "grammar/schema_check.h"

#include <nlohmann/json.hpp>
#include <string_view>

#include "grammar/grammar_compiler.h"

namespace tinfer::grammar {
namespace {

using nlohmann::json;

// Keywords that constrain the output in a way the grammar does not enforce, and why.
struct Unsupported {
  const char* keyword;
  const char* why;
};
constexpr Unsupported kUnsupported[] = {
    {"not", "negation cannot be expressed as a grammar"},
    {"if", "conditional subschemas are not enforced"},
    {"then", "conditional subschemas are not enforced"},
    {"else", "conditional subschemas are not enforced"},
    {"dependentRequired", "dependencies between properties are not enforced"},
    {"dependentSchemas", "dependencies between properties are not enforced"},
    {"dependencies", "dependencies between properties are not enforced"},
    {"uniqueItems", "array item uniqueness is not enforced"},
    {"contains", "array 'contains' is not enforced"},
    {"minContains", "array 'contains' is not enforced"},
    {"maxContains", "array 'contains' is not enforced"},
};

// Keywords whose value is one subschema, a list of them, or a map name -> subschema.
constexpr std::string_view kOne[] = {"items", "additionalProperties", "additionalItems", "unevaluatedProperties",
                                     "unevaluatedItems", "propertyNames"};
constexpr std::string_view kList[] = {"anyOf", "oneOf", "allOf", "prefixItems"};
constexpr std::string_view kMap[] = {"properties", "$defs", "definitions", "patternProperties"};

[[noreturn]] void refuse(const std::string& msg) { throw GrammarError("JSON schema: " + msg); }

void walk(const json& s, const std::string& at) {
  if (s.is_boolean()) return;
  if (!s.is_object()) refuse("a schema must be an object or a boolean, got " + std::string(s.type_name()) + " at " + at);
  for (const Unsupported& u : kUnsupported)
    if (s.contains(u.keyword))
      refuse(std::string("keyword '") + u.keyword + "' at " + at + " is not supported (" + u.why + ")");
  if (s.contains("multipleOf") && s.value("type", "") == "number")
    refuse("keyword 'multipleOf' on a number at " + at + " is not supported (only on integers)");
  for (std::string_view k : kOne) {
    auto it = s.find(std::string(k));
    if (it == s.end()) continue;
    if (k == "items" && it->is_array()) {  // draft-4 tuple form
      for (size_t i = 0; i < it->size(); ++i) walk((*it)[i], at + "/items/" + std::to_string(i));
    } else {
      walk(*it, at + "/" + std::string(k));
    }
  }
  for (std::string_view k : kList) {
    auto it = s.find(std::string(k));
    if (it == s.end()) continue;
    if (!it->is_array()) refuse("'" + std::string(k) + "' at " + at + " must be an array");
    for (size_t i = 0; i < it->size(); ++i) walk((*it)[i], at + "/" + std::string(k) + "/" + std::to_string(i));
  }
  for (std::string_view k : kMap) {
    auto it = s.find(std::string(k));
    if (it == s.end()) continue;
    if (!it->is_object()) refuse("'" + std::string(k) + "' at " + at + " must be an object");
    for (const auto& [name, sub] : it->items()) walk(sub, at + "/" + std::string(k) + "/" + name);
  }
}

}  // namespace

void check_schema_supported(const std::string& schema_json) {
  json s;
  try {
    s = json::parse(schema_json);
  } catch (const json::exception& e) {
    refuse(std::string("not valid JSON: ") + e.what());
  }
  walk(s, "#");
}

}  // namespace tinfer::grammar

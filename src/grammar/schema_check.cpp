// check_schema_supported: a walk over every subschema position of a JSON Schema.
#include "grammar/schema_check.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/json_depth.h"
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

// xgrammar's compile time grows steeply with nesting (arrays nested 1000 deep: minutes, on a 28 kB schema), and a
// schema sent as a string escapes the server's body depth check; so the text's nesting is bounded before parsing.
// Real schemas nest a handful of levels (Pydantic models reach each other through $defs and $ref).
constexpr size_t kMaxSchemaDepth = 128;


// Bounds on what a schema may ask of the compiler, whose time grows faster than linearly in each (measured with
// SmolLM2's 49k vocabulary on 2 busy cores: one object of 3,000 required properties 1.5 s, of 10,000 15 s; 512
// optional properties 1.9 s (256: 0.3 s); an enum of 20,000 values 3 s; anyOf of 3,000 objects 4.5 s). Within
// them a compile takes a couple of seconds at most; a 1 MB schema is refused in milliseconds instead of stalling
// its request for minutes.
constexpr size_t kMaxSubschemas = 4096;         // schema positions walked (properties, items, alternatives ...)
constexpr size_t kMaxOptionalProperties = 256;  // per object: the grammar of their orderings grows ~quadratically
constexpr size_t kMaxEnumValues = 8192;         // enum entries and consts, summed over the schema

struct Budget {
  size_t subschemas = 0;
  size_t enum_values = 0;
};

void spend(Budget& b, const json& s, const std::string& at) {
  if (++b.subschemas > kMaxSubschemas)
    refuse("more than " + std::to_string(kMaxSubschemas) + " subschemas (at " + at + ")");
  auto e = s.find("enum");
  b.enum_values += (e != s.end() && e->is_array() ? e->size() : 0) + (s.contains("const") ? 1 : 0);
  if (b.enum_values > kMaxEnumValues)
    refuse("more than " + std::to_string(kMaxEnumValues) + " enum/const values (at " + at + ")");
  auto p = s.find("properties");
  if (p == s.end() || !p->is_object()) return;
  auto r = s.find("required");
  const size_t required = r != s.end() && r->is_array() ? r->size() : 0;
  if (p->size() > required + kMaxOptionalProperties)
    refuse("more than " + std::to_string(kMaxOptionalProperties) + " optional properties in the object at " + at);
}

// Shapes xgrammar compiles to a grammar that does not match the schema: an empty anyOf / oneOf becomes the empty
// string and an empty allOf / type list any value (all admit nothing), and a `required` name that `properties`
// does not describe is dropped (`{}` would pass for {"required": ["a"]}).
void check_shapes(const json& s, const std::string& at) {
  for (const char* k : {"anyOf", "oneOf", "allOf", "type"}) {
    auto it = s.find(k);
    if (it != s.end() && it->is_array() && it->empty())
      refuse(std::string("'") + k + "' at " + at + " is an empty list (no value could match it)");
  }
  auto req = s.find("required");
  if (req == s.end() || !req->is_array()) return;
  auto props = s.find("properties");
  for (const json& name : *req)
    if (name.is_string() && (props == s.end() || !props->is_object() || !props->contains(name.get<std::string>())))
      refuse("required property '" + name.get<std::string>() + "' at " + at +
             " is not in 'properties' beside it (the grammar can only require a property it describes)");
}

// "type": "number" or a list holding it.
bool has_type(const json& s, const char* type) {
  auto t = s.find("type");
  if (t == s.end()) return false;
  if (t->is_array()) return std::find(t->begin(), t->end(), json(type)) != t->end();
  return *t == type;
}

// What xgrammar accepts but would not enforce as written (from the server's end-to-end tests): lookarounds in a
// pattern, lengths beside a pattern or a pattern-backed format, multipleOf beyond whole integers, a $ref outside the
// schema, allOf of several subschemas (compiled as any value).
// The string formats xgrammar turns into a pattern of its own; with 'pattern' they drop minLength/maxLength.
constexpr std::string_view kPatternFormats[] = {"email", "date", "time", "date-time", "duration", "ipv4", "ipv6",
                                                "hostname", "uuid", "uri", "uri-reference", "uri-template",
                                                "json-pointer", "relative-json-pointer"};

// A lookaround group "(?=", "(?!", "(?<=", "(?<!" not escaped: a JSON-schema pattern's regex engine skips them.
bool has_lookaround(const std::string& re) {
  for (size_t i = 0; i + 2 < re.size(); ++i) {
    if (re[i] == '\\') {
      ++i;
      continue;
    }
    if (re[i] != '(' || re[i + 1] != '?') continue;
    const char c = re[i + 2];
    if (c == '=' || c == '!' || (c == '<' && i + 3 < re.size() && (re[i + 3] == '=' || re[i + 3] == '!'))) return true;
  }
  return false;
}

void check_string(const json& s, const std::string& at) {
  auto pat = s.find("pattern");
  if (pat != s.end() && pat->is_string() && has_lookaround(pat->get<std::string>()))
    refuse("a lookahead or lookbehind in 'pattern' at " + at + " is not supported");
  if (!s.contains("minLength") && !s.contains("maxLength")) return;
  auto fmt = s.find("format");
  const bool fmt_pattern = fmt != s.end() && fmt->is_string() &&
                           std::find(std::begin(kPatternFormats), std::end(kPatternFormats),
                                     fmt->get<std::string>()) != std::end(kPatternFormats);
  if (pat != s.end() || fmt_pattern)
    refuse("minLength/maxLength together with '" + std::string(pat != s.end() ? "pattern" : "format") + "' at " + at +
           " is not supported (the lengths would not be enforced); drop them or write them into a pattern");
}

// xgrammar enforces multipleOf on integers only, and there only a whole number up to this; beyond, it is ignored.
constexpr double kMaxIntegerMultipleOf = 1024;

void check_number(const json& s, const std::string& at) {
  auto m = s.find("multipleOf");
  if (m == s.end()) return;
  if (has_type(s, "number")) refuse("keyword 'multipleOf' on a number at " + at + " is not supported (only on integers)");
  if (has_type(s, "integer") && m->is_number() &&
      (m->get<double>() != std::floor(m->get<double>()) || m->get<double>() > kMaxIntegerMultipleOf))
    refuse("keyword 'multipleOf' at " + at + " must be a whole number up to " +
           std::to_string(int(kMaxIntegerMultipleOf)) + " (others are not enforced)");
}

void check_refs_and_all_of(const json& s, const std::string& at) {
  if (auto ref = s.find("$ref"); ref != s.end() && ref->is_string()) {
    const std::string& r = ref->get_ref<const std::string&>();
    if (r != "#" && r.rfind("#/", 0) != 0)
      refuse("'$ref' \"" + r + "\" at " + at + " is not supported (only '#' and '#/...' within the schema)");
  }
  if (auto a = s.find("allOf"); a != s.end() && a->is_array() && a->size() > 1)
    refuse("keyword 'allOf' with more than one subschema at " + at + " is not supported (it is not enforced)");
}

void walk(const json& s, const std::string& at, Budget& budget) {
  if (s.is_boolean()) return;
  if (!s.is_object()) refuse("a schema must be an object or a boolean, got " + std::string(s.type_name()) + " at " + at);
  spend(budget, s, at);
  for (const Unsupported& u : kUnsupported)
    if (s.contains(u.keyword))
      refuse(std::string("keyword '") + u.keyword + "' at " + at + " is not supported (" + u.why + ")");
  check_shapes(s, at);
  check_string(s, at);
  check_number(s, at);
  check_refs_and_all_of(s, at);
  for (std::string_view k : kOne) {
    auto it = s.find(std::string(k));
    if (it == s.end()) continue;
    if (k == "items" && it->is_array()) {  // draft-4 tuple form
      for (size_t i = 0; i < it->size(); ++i) walk((*it)[i], at + "/items/" + std::to_string(i), budget);
    } else {
      walk(*it, at + "/" + std::string(k), budget);
    }
  }
  for (std::string_view k : kList) {
    auto it = s.find(std::string(k));
    if (it == s.end()) continue;
    if (!it->is_array()) refuse("'" + std::string(k) + "' at " + at + " must be an array");
    for (size_t i = 0; i < it->size(); ++i) walk((*it)[i], at + "/" + std::string(k) + "/" + std::to_string(i), budget);
  }
  for (std::string_view k : kMap) {
    auto it = s.find(std::string(k));
    if (it == s.end()) continue;
    if (!it->is_object()) refuse("'" + std::string(k) + "' at " + at + " must be an object");
    for (const auto& [name, sub] : it->items()) walk(sub, at + "/" + std::string(k) + "/" + name, budget);
  }
}

json parse_bounded(const std::string& text) {
  if (json_deeper_than(text, kMaxSchemaDepth)) refuse("nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels");
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    refuse(std::string("not valid JSON: ") + e.what());
  }
}

// The schemas inside a structural tag: {"type": "json_schema", "json_schema": S} anywhere in its format tree, and
// the legacy form's {"structures": [{"begin", "schema": S, "end"}]}. One budget for all of them: a tag built from
// 10,000 tools is one compile.
void walk_tag(const json& t, const std::string& at, Budget& budget) {
  if (t.is_array()) {
    for (size_t i = 0; i < t.size(); ++i) walk_tag(t[i], at + "/" + std::to_string(i), budget);
    return;
  }
  if (!t.is_object()) return;
  for (const auto& [k, v] : t.items()) {
    const bool schema = (k == "json_schema" && t.contains("type") && t["type"] == "json_schema") ||
                        (k == "schema" && t.contains("begin"));
    if (schema)
      walk(v.is_string() ? parse_bounded(v.get<std::string>()) : v, at + "/" + k, budget);
    else
      walk_tag(v, at + "/" + k, budget);
  }
}

}  // namespace

void check_schema_supported(const std::string& schema_json) {
  Budget budget;
  walk(parse_bounded(schema_json), "#", budget);
}

void check_structural_tag(const std::string& tag_json) {
  Budget budget;
  walk_tag(parse_bounded(tag_json), "#", budget);
}

}  // namespace tinfer::grammar

// check_schema_supported: a walk over every subschema position of a JSON Schema.
#include "grammar/schema_check.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_set>

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
constexpr std::string_view kOne[] = {
    "items", "additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems", "propertyNames"};
constexpr std::string_view kList[] = {"anyOf", "oneOf", "allOf", "prefixItems"};
constexpr std::string_view kMap[] = {"properties", "$defs", "definitions", "patternProperties"};

// xgrammar's compile time, measured on SmolLM2's 49k vocabulary on 2 busy cores: it grows with the cube of one
// object's optional properties (500 -> 1.2 s, 1,000 -> 13 s, 2,000 -> 112 s), faster than linearly with the
// schema's subschemas (1,000 string properties -> 1.2 s, 2,000 -> 4.4 s, 4,000 -> 13.5 s, 20,000 -> over 280 s)
// and with its enum entries (8,000 -> 0.4 s, 50,000 -> 45 s). A compile holds its request's HTTP thread and two
// compile threads, so beyond these bounds (OpenAI's own are 5,000 properties and 1,000 enum values) a schema is
// refused rather than compiled for minutes.
constexpr size_t kMaxOptionalProperties = 256;  // in one object
constexpr size_t kMaxSubschemas = 2048;         // in the whole schema
constexpr size_t kMaxEnumEntries = 8192;        // in the whole schema

struct Budget {
  size_t subschemas = 0;
  size_t enum_entries = 0;
};

[[noreturn]] void refuse(const std::string& msg) { throw GrammarError("JSON schema: " + msg); }

// The string formats xgrammar turns into a pattern of its own; with 'pattern' they drop minLength/maxLength.
constexpr std::string_view kPatternFormats[] = {
    "email",    "date", "time", "date-time",     "duration",     "ipv4",         "ipv6",
    "hostname", "uuid", "uri",  "uri-reference", "uri-template", "json-pointer", "relative-json-pointer"};

bool has_type(const json& s, const char* type) {
  auto t = s.find("type");
  if (t == s.end()) return false;
  if (t->is_string()) return *t == type;
  return t->is_array() && std::find(t->begin(), t->end(), json(type)) != t->end();
}

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
                           std::find(std::begin(kPatternFormats), std::end(kPatternFormats), fmt->get<std::string>()) !=
                               std::end(kPatternFormats);
  if (pat != s.end() || fmt_pattern)
    refuse("minLength/maxLength together with '" + std::string(pat != s.end() ? "pattern" : "format") + "' at " + at +
           " is not supported (the lengths would not be enforced); drop them or write them into a pattern");
}

// xgrammar enforces multipleOf on integers only, and there only a whole number up to this; beyond, it is ignored.
constexpr double kMaxIntegerMultipleOf = 1024;

void check_number(const json& s, const std::string& at) {
  auto m = s.find("multipleOf");
  if (m == s.end()) return;
  if (has_type(s, "number"))
    refuse("keyword 'multipleOf' on a number at " + at + " is not supported (only on integers)");
  if (has_type(s, "integer") && m->is_number() &&
      (m->get<double>() != std::floor(m->get<double>()) || m->get<double>() > kMaxIntegerMultipleOf))
    refuse("keyword 'multipleOf' at " + at + " must be a whole number up to " +
           std::to_string(int(kMaxIntegerMultipleOf)) + " (others are not enforced)");
}

// More than kMaxOptionalProperties optional properties in one object (see the bound's comment).
void check_properties(const json& s, const std::string& at) {
  auto p = s.find("properties");
  if (p == s.end() || !p->is_object()) return;
  std::unordered_set<std::string> required;
  if (auto r = s.find("required"); r != s.end() && r->is_array())
    for (const auto& name : *r)
      if (name.is_string()) required.insert(name.get<std::string>());
  size_t optional = 0;
  for (const auto& [name, sub] : p->items()) optional += !required.count(name);
  if (optional > kMaxOptionalProperties)
    refuse("the object at " + at + " has " + std::to_string(optional) +
           " optional properties, more than this server compiles (" + std::to_string(kMaxOptionalProperties) +
           "); list the ones that must appear in 'required'");
}

// What xgrammar accepts but does not enforce as written (it compiles them as "any value" or drops the keyword), or
// compiles too slowly to serve.
void check_shape(const json& s, const std::string& at) {
  check_string(s, at);
  check_number(s, at);
  if (auto ref = s.find("$ref"); ref != s.end() && ref->is_string()) {
    const std::string& r = ref->get_ref<const std::string&>();
    if (r != "#" && r.rfind("#/", 0) != 0)
      refuse("'$ref' \"" + r + "\" at " + at + " is not supported (only '#' and '#/...' within the schema)");
  }
  if (auto a = s.find("allOf"); a != s.end() && a->is_array() && a->size() > 1)
    refuse("keyword 'allOf' with more than one subschema at " + at + " is not supported (it is not enforced)");
  check_properties(s, at);
}

void count(const json& s, const std::string& at, Budget& b) {
  if (++b.subschemas > kMaxSubschemas)
    refuse("the schema has more than " + std::to_string(kMaxSubschemas) + " subschemas (at " + at +
           "), more than this server compiles");
  auto e = s.is_object() ? s.find("enum") : s.end();
  if (e != s.end() && e->is_array() && (b.enum_entries += e->size()) > kMaxEnumEntries)
    refuse("the schema has more than " + std::to_string(kMaxEnumEntries) + " enum entries (at " + at +
           "), more than this server compiles");
}

void walk(const json& s, const std::string& at, Budget& b) {
  count(s, at, b);
  if (s.is_boolean()) return;
  if (!s.is_object())
    refuse("a schema must be an object or a boolean, got " + std::string(s.type_name()) + " at " + at);
  for (const Unsupported& u : kUnsupported)
    if (s.contains(u.keyword))
      refuse(std::string("keyword '") + u.keyword + "' at " + at + " is not supported (" + u.why + ")");
  check_shape(s, at);
  for (std::string_view k : kOne) {
    auto it = s.find(std::string(k));
    if (it == s.end()) continue;
    if (k == "items" && it->is_array()) {  // draft-4 tuple form
      for (size_t i = 0; i < it->size(); ++i) walk((*it)[i], at + "/items/" + std::to_string(i), b);
    } else {
      walk(*it, at + "/" + std::string(k), b);
    }
  }
  for (std::string_view k : kList) {
    auto it = s.find(std::string(k));
    if (it == s.end()) continue;
    if (!it->is_array()) refuse("'" + std::string(k) + "' at " + at + " must be an array");
    for (size_t i = 0; i < it->size(); ++i) walk((*it)[i], at + "/" + std::string(k) + "/" + std::to_string(i), b);
  }
  for (std::string_view k : kMap) {
    auto it = s.find(std::string(k));
    if (it == s.end()) continue;
    if (!it->is_object()) refuse("'" + std::string(k) + "' at " + at + " must be an object");
    for (const auto& [name, sub] : it->items()) walk(sub, at + "/" + std::string(k) + "/" + name, b);
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
  Budget b;
  walk(s, "#", b);
}

}  // namespace tinfer::grammar

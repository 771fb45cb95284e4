// Schemas the grammar cannot honour are refused at compile time with a GrammarError naming the keyword and where it
// is (a JSON pointer from the schema's root), whatever the nesting; so are invalid JSON and non-schema values. A
// keyword's name used as a property name or inside a value is not a keyword and is not refused.
#include <gtest/gtest.h>

#include "grammar/grammar_fixture.h"

namespace tinfer::grammar_test {
namespace {

// Every row of kUnsupported (schema_check.cpp), each with a value of its kind.
struct Keyword {
  const char* name;
  const char* value;
};
constexpr Keyword kKeywords[] = {
    {"not", R"({"type": "string"})"},
    {"if", R"({"type": "string"})"},
    {"then", R"({"minLength": 1})"},
    {"else", R"({"maxLength": 0})"},
    {"dependentRequired", R"({"a": ["b"]})"},
    {"dependentSchemas", R"({"a": {"required": ["b"]}})"},
    {"dependencies", R"({"a": ["b"]})"},
    {"uniqueItems", "true"},
    {"contains", R"({"type": "integer"})"},
    {"minContains", "1"},
    {"maxContains", "2"},
};

// Where a subschema can sit: a template with @ for the subschema, and the JSON pointer that names it.
struct Position {
  const char* schema;
  const char* pointer;
};
constexpr Position kPositions[] = {
    {"@", "#"},
    {R"({"type": "object", "properties": {"a": @}})", "#/properties/a"},
    {R"({"type": "array", "items": @})", "#/items"},
    {R"({"anyOf": [{"type": "integer"}, @]})", "#/anyOf/1"},
    {R"({"oneOf": [@]})", "#/oneOf/0"},
    {R"({"allOf": [@]})", "#/allOf/0"},
    {R"({"$defs": {"d": @}, "$ref": "#/$defs/d"})", "#/$defs/d"},
    {R"({"definitions": {"d": @}, "$ref": "#/definitions/d"})", "#/definitions/d"},
    {R"({"type": "object", "additionalProperties": @})", "#/additionalProperties"},
    {R"({"type": "array", "prefixItems": [{"type": "integer"}, @]})", "#/prefixItems/1"},
    {R"({"type": "object", "patternProperties": {"^x": @}})", "#/patternProperties/^x"},
    {R"({"type": "object", "properties": {"a": {"type": "array", "items": {"anyOf": [@]}}}})",
     "#/properties/a/items/anyOf/0"},
};

std::string place(const char* tmpl, const std::string& sub) {
  std::string s = tmpl;
  return s.replace(s.find('@'), 1, sub);
}

class RefusalTest : public GrammarTest {};

TEST_F(RefusalTest, EveryUnsupportedKeywordAtEveryPositionNamesKeywordAndPath) {
  for (const Keyword& k : kKeywords) {
    const std::string sub = std::string(R"({"type": "array", ")") + k.name + "\": " + k.value + "}";
    for (const Position& p : kPositions) {
      const std::string msg = error_of(GrammarKind::kJsonSchema, place(p.schema, sub));
      EXPECT_NE(msg.find(std::string("'") + k.name + "'"), std::string::npos) << k.name << " at " << p.pointer << ": " << msg;
      EXPECT_NE(msg.find(std::string(" at ") + p.pointer + " "), std::string::npos) << k.name << ": " << msg;
      EXPECT_NE(msg.find("not supported"), std::string::npos) << msg;
    }
  }
}

TEST_F(RefusalTest, MultipleOfOnANumberIsRefusedOnAnIntegerTaken) {
  EXPECT_NE(error_of(GrammarKind::kJsonSchema, R"({"type": "number", "multipleOf": 0.5})").find("'multipleOf'"),
            std::string::npos);
  EXPECT_EQ(error_of(GrammarKind::kJsonSchema, R"({"type": "integer", "multipleOf": 5})"), "");
}

TEST_F(RefusalTest, KeywordNamesAsPropertyNamesOrValuesAreNotKeywords) {
  auto g = schema(R"({"type": "object", "properties": {"not": {"type": "integer"}, "if": {"const": {"then": 1}},
                     "contains": {"enum": [{"uniqueItems": true}]}}, "required": ["not", "if", "contains"]})");
  // A const / enum value comes out as xgrammar serializes it: compact with no spaces, whatever the separators.
  EXPECT_TRUE(matches(*g, R"({"not": 1, "if": {"then":1}, "contains": {"uniqueItems":true}})"));
}

TEST_F(RefusalTest, InvalidJsonAndNonSchemas) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type": "object")", "not valid JSON"},
      {"", "not valid JSON"},
      {"{'type': 'string'}", "not valid JSON"},
      {"42", "must be an object or a boolean, got number at #"},
      {R"("string")", "must be an object or a boolean, got string at #"},
      {"null", "must be an object or a boolean, got null at #"},
      {R"({"type": "object", "properties": {"a": 3}})", "got number at #/properties/a"},
      {R"({"anyOf": {"type": "string"}})", "'anyOf' at # must be an array"},
      {R"({"properties": []})", "'properties' at # must be an object"},
  };
  for (const auto& [src, want] : cases) {
    const std::string msg = error_of(GrammarKind::kJsonSchema, src);
    EXPECT_NE(msg.find(want), std::string::npos) << src << " -> " << msg;
  }
}

TEST_F(RefusalTest, XgrammarRefusalsAreReadable) {
  // Errors xgrammar itself raises reach the client without its "[hh:mm:ss] file.cc:NN: " prefix.
  const char* bad[] = {R"({"$ref": "#/$defs/missing"})", R"({"type": "strung"})"};
  for (const char* src : bad) {
    const std::string msg = error_of(GrammarKind::kJsonSchema, src);
    ASSERT_NE(msg, "") << src;
    EXPECT_EQ(msg.find(".cc:"), std::string::npos) << msg;
    EXPECT_NE(msg[0], '[') << msg;
    std::printf("  %s -> %s\n", src, msg.c_str());
  }
}

TEST_F(RefusalTest, ShapesXgrammarWouldCompileWronglyAreRefused) {
  // Each compiled, unchecked, to a grammar the schema disagrees with: the empty string for an empty anyOf/oneOf,
  // any value for an empty allOf or type list, and `{}` for a required property that `properties` lacks.
  const std::pair<const char*, const char*> cases[] = {
      {R"({"anyOf": []})", "'anyOf' at # is an empty list"},
      {R"({"oneOf": []})", "'oneOf' at # is an empty list"},
      {R"({"allOf": []})", "'allOf' at # is an empty list"},
      {R"({"type": []})", "'type' at # is an empty list"},
      {R"({"type": "object", "properties": {"a": {"anyOf": []}}})", "'anyOf' at #/properties/a is an empty list"},
      {R"({"type": "object", "required": ["a"]})", "required property 'a' at # is not in 'properties'"},
      {R"({"type": "object", "properties": {"b": true}, "required": ["b", "a"], "additionalProperties": true})",
       "required property 'a' at #"},
      {R"({"allOf": [{"properties": {"a": true}}, {"required": ["a"]}]})", "required property 'a' at #/allOf/1"},
  };
  for (const auto& [src, want] : cases) {
    const std::string msg = error_of(GrammarKind::kJsonSchema, src);
    EXPECT_NE(msg.find(want), std::string::npos) << src << " -> " << msg;
  }
}

TEST_F(RefusalTest, CompileCostBounds) {
  auto props = [](int n, bool required) {
    std::string p, r;
    for (int i = 0; i < n; ++i) {
      p += (i ? ", \"k" : "\"k") + std::to_string(i) + "\": {\"type\": \"integer\"}";
      r += (i ? ", \"k" : "\"k") + std::to_string(i) + "\"";
    }
    return R"({"type": "object", "properties": {)" + p + "}" + (required ? R"(, "required": [)" + r + "]" : "") + "}";
  };
  EXPECT_EQ(error_of(GrammarKind::kJsonSchema, props(256, false)), "");
  EXPECT_NE(error_of(GrammarKind::kJsonSchema, props(257, false)).find("more than 256 optional properties"),
            std::string::npos);
  EXPECT_EQ(error_of(GrammarKind::kJsonSchema, props(1000, true)), "");  // required ones cost less
  EXPECT_NE(error_of(GrammarKind::kJsonSchema, props(4096, true)).find("more than 4096 subschemas"), std::string::npos);
  std::string deep = std::string(129, '[');
  EXPECT_NE(error_of(GrammarKind::kJsonSchema, R"({"enum": )" + deep + std::string(129, ']') + "}")
                .find("nested deeper than 128 levels"),
            std::string::npos);
  // Brackets inside strings are not nesting.
  EXPECT_EQ(error_of(GrammarKind::kJsonSchema, R"({"type": "string", "description": ")" + deep + "\\\"\"}"), "");
}

TEST_F(RefusalTest, MultipleOfBesideATypeList) {
  // "type" as a list once made the multipleOf check throw nlohmann's type_error (a confusing message).
  EXPECT_EQ(error_of(GrammarKind::kJsonSchema, R"({"type": ["integer", "null"], "multipleOf": 2})"), "");
  EXPECT_NE(error_of(GrammarKind::kJsonSchema, R"({"type": ["number", "null"], "multipleOf": 0.5})").find("'multipleOf'"),
            std::string::npos);
}

std::string tool_tag(int tools, const std::string& schema) {
  std::string tags;
  for (int i = 0; i < tools; ++i)
    tags += (i ? ", " : "") + std::string(R"({"type": "tag", "begin": "<f)") + std::to_string(i) +
            R"(>", "content": {"type": "json_schema", "json_schema": )" + schema + R"(}, "end": "</f>"})";
  return R"({"type": "structural_tag", "format": {"type": "or", "elements": [)" + tags + "]}}";
}

TEST_F(RefusalTest, SchemasInsideStructuralTagsAreChecked) {
  const std::string ok = R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})";
  auto g = compile(GrammarKind::kStructuralTag, tool_tag(2, ok));
  EXPECT_TRUE(matches(*g, R"(<f1>{"city": "Paris"}</f>)")) << "xgrammar's own separators may differ";
  const std::string bad = R"({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true}}})";
  const std::string msg = error_of(GrammarKind::kStructuralTag, tool_tag(3, bad));
  EXPECT_NE(msg.find("'uniqueItems' at #/format/elements/0/content/json_schema/properties/tags"), std::string::npos)
      << msg;
  // 10,000 tools are one compile under one budget: refused at once.
  EXPECT_NE(error_of(GrammarKind::kStructuralTag, tool_tag(10000, ok)).find("more than 4096 subschemas"),
            std::string::npos);
  const std::string legacy = R"({"structures": [{"begin": "<f>", "schema": {"not": {}}, "end": "</f>"}],
                                 "triggers": ["<f>"]})";
  EXPECT_NE(error_of(GrammarKind::kStructuralTag, legacy).find("'not' at #/structures/0/schema"), std::string::npos);
}

TEST_F(RefusalTest, BooleanSchemas) {
  EXPECT_TRUE(matches(*schema("true"), "[1, \"a\"]"));
  EXPECT_NE(error_of(GrammarKind::kJsonSchema, "false"), "");  // admits nothing
}

}  // namespace
}  // namespace tinfer::grammar_test

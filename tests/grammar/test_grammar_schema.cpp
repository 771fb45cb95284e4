// JSON Schema -> grammar -> the strings it takes and refuses. The output is compact JSON (", " and ": ", no other
// whitespace) with properties in the order the schema lists them; a string is refused when some byte is not
// allowed or when it cannot end there.
#include <gtest/gtest.h>

#include "grammar/grammar_fixture.h"

namespace tinfer::grammar_test {
namespace {

struct Case {
  const char* text;
  bool ok;
};

class SchemaTest : public GrammarTest {
 protected:
  void expect(const std::string& schema_json, std::initializer_list<Case> cases) {
    auto g = schema(schema_json);
    for (const Case& c : cases) EXPECT_EQ(matches(*g, c.text), c.ok) << schema_json << "\n  on: " << c.text;
  }
};

TEST_F(SchemaTest, RequiredAndOptionalPropertiesInSchemaOrder) {
  expect(R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
             "required": ["name"], "additionalProperties": false})",
         {{R"({"name": "bo"})", true},
          {R"({"name": "bo", "age": 3})", true},
          {R"({"age": 3, "name": "bo"})", false},  // order as in the schema
          {R"({"age": 3})", false},                // name is required
          {R"({"name":"bo"})", false},             // compact separators only
          {R"({"name": "bo", "x": 1})", false},    // strict: no other keys
          {R"({"name": 1})", false},
          {R"({"name": "bo"} )", false}});
}

TEST_F(SchemaTest, PropertyOrderFollowsTheSchemaTextNotTheAlphabet) {
  expect(R"({"type": "object", "properties": {"zeta": {"type": "boolean"}, "alpha": {"type": "null"}},
             "required": ["zeta", "alpha"], "additionalProperties": false})",
         {{R"({"zeta": true, "alpha": null})", true}, {R"({"alpha": null, "zeta": true})", false}});
}

TEST_F(SchemaTest, Enum) {
  expect(R"({"enum": ["red", "green", 3, null, true]})",
         {{R"("red")", true}, {R"("green")", true}, {"3", true}, {"null", true}, {"true", true},
          {R"("blue")", false}, {R"("re")", false}, {"false", false}, {"4", false}});
}

TEST_F(SchemaTest, Const) {
  expect(R"({"type": "object", "properties": {"v": {"const": "x1"}}, "required": ["v"]})",
         {{R"({"v": "x1"})", true}, {R"({"v": "x2"})", false}, {"{}", false}});
}

TEST_F(SchemaTest, ArrayMinAndMaxItems) {
  expect(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})",
         {{"[1, 2]", true}, {"[1, 2, 3]", true}, {"[1]", false}, {"[]", false}, {"[1, 2, 3, 4]", false},
          {"[1,2]", false}, {"[1, \"a\"]", false}});
}

TEST_F(SchemaTest, StringPatternAndLength) {
  expect(R"({"type": "string", "pattern": "^[a-c]{2}[0-9]+$"})",
         {{R"("ab1")", true}, {R"("cc042")", true}, {R"("ad1")", false}, {R"("ab")", false}, {R"("abc1")", false}});
  expect(R"({"type": "string", "minLength": 2, "maxLength": 3})",
         {{R"("ab")", true}, {R"("abc")", true}, {R"("a")", false}, {R"("abcd")", false}});
}

TEST_F(SchemaTest, AnyOf) {
  expect(R"({"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"k": {"type": "string"}},
             "required": ["k"], "additionalProperties": false}]})",
         {{"12", true}, {R"({"k": "v"})", true}, {R"("s")", false}, {"[]", false}, {"1.5", false}});
}

TEST_F(SchemaTest, NullableTypeList) {
  expect(R"({"type": "object", "properties": {"n": {"type": ["string", "null"]}}, "required": ["n"],
             "additionalProperties": false})",
         {{R"({"n": "a"})", true}, {R"({"n": null})", true}, {R"({"n": 1})", false}, {R"({"n": nul})", false}});
}

TEST_F(SchemaTest, RefIntoDefs) {
  expect(R"({"$defs": {"pt": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
             "required": ["x", "y"], "additionalProperties": false}},
             "type": "object", "properties": {"a": {"$ref": "#/$defs/pt"}, "b": {"$ref": "#/$defs/pt"}},
             "required": ["a", "b"], "additionalProperties": false})",
         {{R"({"a": {"x": 1, "y": 2}, "b": {"x": -3, "y": 0}})", true},
          {R"({"a": {"x": 1}, "b": {"x": 1, "y": 2}})", false},
          {R"({"a": {"x": 1, "y": 2}})", false}});
}

TEST_F(SchemaTest, RecursiveRef) {
  expect(R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
             "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v", "kids"],
             "additionalProperties": false}}, "$ref": "#/$defs/node"})",
         {{R"({"v": 1, "kids": []})", true},
          {R"({"v": 1, "kids": [{"v": 2, "kids": [{"v": 3, "kids": []}]}]})", true},
          {R"({"v": 1, "kids": [{"v": 2}]})", false}});
}

TEST_F(SchemaTest, NestedObjects) {
  expect(R"({"type": "object", "properties": {"outer": {"type": "object", "properties": {"inner": {"type": "object",
             "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false}},
             "required": ["inner"], "additionalProperties": false}}, "required": ["outer"],
             "additionalProperties": false})",
         {{R"({"outer": {"inner": {"ok": false}}})", true}, {R"({"outer": {"inner": {}}})", false},
          {R"({"outer": {"inner": {"ok": false}, "x": 1}})", false}});
}

TEST_F(SchemaTest, IntegerRanges) {
  expect(R"({"type": "integer", "minimum": -5, "maximum": 12})",
         {{"-5", true}, {"0", true}, {"7", true}, {"12", true}, {"13", false}, {"-6", false}, {"100", false},
          {"012", false}, {"1.0", false}});
  expect(R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 3})",
         {{"1", true}, {"2", true}, {"0", false}, {"3", false}});
}

TEST_F(SchemaTest, UnlistedKeysOnlyThroughAdditionalProperties) {
  // Schemas compile strict: an object that does not say additionalProperties takes only its listed keys.
  expect(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})",
         {{R"({"a": 1})", true}, {R"({"a": 1, "b": 2})", false}});
  expect(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
             "additionalProperties": {"type": "integer"}})",
         {{R"({"a": 1})", true}, {R"({"a": 1, "b": 2})", true}, {R"({"a": 1, "b": "s"})", false}});
}

TEST_F(SchemaTest, JsonObjectKindTakesAnyObjectOnly) {
  auto g = compile(GrammarKind::kJsonObject, "");
  EXPECT_TRUE(matches(*g, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(matches(*g, "{}"));
  EXPECT_FALSE(matches(*g, "[1]"));
  EXPECT_FALSE(matches(*g, R"("s")"));
}

TEST_F(SchemaTest, Utf8InStringsAndMultiByteTokens) {
  auto g = schema(R"({"type": "string", "maxLength": 4})");
  EXPECT_TRUE(matches(*g, "\"\xc3\xa9t\xc3\xa9\""));
  EXPECT_FALSE(matches(*g, "\"\xc3\""));  // a lead byte alone is not a character
  auto c = g->start();  // the same text through multi-byte tokens
  for (int32_t t : toy().encode("\"\xc3\xa9t\xc3\xa9\"", false)) ASSERT_TRUE(c->accept(t)) << t;
  EXPECT_TRUE(c->accept(kEos));
  EXPECT_TRUE(c->terminated());
}

}  // namespace
}  // namespace tinfer::grammar_test

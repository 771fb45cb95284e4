// Hostile sizes and empty languages: a 1 MB schema and deeply nested schemas / regexes / grammars compile or fail
// with a GrammarError in seconds (compile times printed), and a grammar that admits no output is refused at
// compile time rather than handed to a request that could then never end.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "grammar/grammar_fixture.h"

namespace tinfer::grammar_test {
namespace {

class LimitsTest : public GrammarTest {
 protected:
  // Compiles (or refuses) `src`, prints the time, and checks it is bounded. True when it compiled.
  bool timed(const char* what, GrammarKind k, const std::string& src, double max_seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string err;
    try {
      compile(k, src);
    } catch (const GrammarError& e) {
      err = e.what();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("  %-44s %8zu bytes  %7.3f s  %s\n", what, src.size(), s, err.empty() ? "compiled" : err.substr(0, 90).c_str());
    EXPECT_LT(s, max_seconds) << what;
    return err.empty();
  }
};

std::string object_with_properties(int n) {
  std::string s = R"({"type": "object", "properties": {)";
  for (int i = 0; i < n; ++i)
    s += (i ? ", " : "") + std::string("\"property_number_") + std::to_string(i) +
         R"(": {"type": "string", "description": "a field of the big schema, described at some length"})";
  return s + "}}";
}

TEST_F(LimitsTest, OneMegabyteSchemas) {
  // Past the bounds (schema_check.cpp): refused before xgrammar sees them, whose compile would take minutes.
  const std::string big = object_with_properties(10000);
  ASSERT_GT(big.size(), size_t(1) << 20);
  EXPECT_FALSE(timed("object with 10,000 optional properties", GrammarKind::kJsonSchema, big, 2.0));
  std::string req = big.substr(0, big.size() - 1) + R"(, "required": [)";  // every property required
  for (int i = 0; i < 10000; ++i) req += (i ? ", \"" : "\"") + std::string("property_number_") + std::to_string(i) + "\"";
  EXPECT_FALSE(timed("object with 10,000 required properties", GrammarKind::kJsonSchema, req + "]}", 2.0));
  std::string e = R"({"enum": [)";
  for (int i = 0; i < 100000; ++i) e += (i ? ", \"" : "\"") + std::to_string(i) + "\"";
  EXPECT_FALSE(timed("enum of 100,000 values", GrammarKind::kJsonSchema, e + "]}", 2.0));
  // Within them: a megabyte that is mostly descriptions compiles.
  std::string wordy = R"({"type": "object", "properties": {)";
  for (int i = 0; i < 200; ++i)
    wordy += (i ? ", " : "") + std::string("\"p") + std::to_string(i) + R"(": {"type": "integer", "description": ")" +
             std::string(5200, 'w') + "\"}";
  wordy += "}}";
  ASSERT_GT(wordy.size(), size_t(1) << 20);
  EXPECT_TRUE(timed("200 optional properties, 1 MB of descriptions", GrammarKind::kJsonSchema, wordy, 10.0));
}

TEST_F(LimitsTest, DeeplyNestedSchemas) {
  // Arrays nest one JSON level each, objects two ("properties" and the property); the bound is 128 JSON levels.
  for (int depth : {16, 100, 128, 1000, 100000}) {
    std::string s;
    for (int i = 0; i < depth; ++i) s += R"({"type": "array", "items": )";
    s += "true" + std::string(size_t(depth), '}');
    EXPECT_EQ(timed(("array nested " + std::to_string(depth) + " deep").c_str(), GrammarKind::kJsonSchema, s, 5.0),
              depth <= 128);
    std::string o;
    for (int i = 0; i < depth; ++i) o += R"({"properties": {"a": )";
    o += "true" + std::string(size_t(depth) * 2, '}');
    EXPECT_EQ(timed(("object nested " + std::to_string(depth) + " deep").c_str(), GrammarKind::kJsonSchema, o, 5.0),
              depth <= 64);
  }
}

TEST_F(LimitsTest, DeeplyNestedRegexAndEbnf) {
  for (int depth : {16, 1000, 100000}) {
    // xgrammar's parser bounds its own nesting ("Nest layer exceeded the maximum limit").
    const std::string open(size_t(depth), '('), close(size_t(depth), ')');
    const bool re = timed(("regex nested " + std::to_string(depth) + " deep").c_str(), GrammarKind::kRegex,
                          open + "a" + close, 5.0);
    const bool eb = timed(("EBNF nested " + std::to_string(depth) + " deep").c_str(), GrammarKind::kEbnf,
                          "root ::= " + open + "\"a\"" + close, 5.0);
    EXPECT_EQ(re, depth <= 1000);
    EXPECT_EQ(eb, depth <= 1000);
  }
}

TEST_F(LimitsTest, GrammarsThatAdmitNothingAreRefused) {
  const std::pair<GrammarKind, const char*> empty[] = {
      {GrammarKind::kJsonSchema, R"({"enum": []})"},
      {GrammarKind::kJsonSchema, "false"},
      {GrammarKind::kJsonSchema, R"({"type": "object", "properties": {"a": false}, "required": ["a"]})"},
      {GrammarKind::kJsonSchema, R"({"type": "integer", "minimum": 5, "maximum": 3})"},
      {GrammarKind::kJsonSchema, R"({"type": "array", "minItems": 3, "maxItems": 1})"},
      {GrammarKind::kJsonSchema, R"({"type": "string", "minLength": 3, "maxLength": 1})"},
      {GrammarKind::kJsonSchema, R"({"anyOf": []})"},
      {GrammarKind::kEbnf, R"(root ::= [^\x00-\U0010FFFF])"},
      {GrammarKind::kRegex, "[^\\x00-\\U0010FFFF]"},
  };
  for (const auto& [kind, src] : empty) {
    const std::string msg = error_of(kind, src);
    std::printf("  %-14s %-70s -> %s\n", grammar::grammar_kind_name(kind), src, msg.empty() ? "COMPILED" : msg.c_str());
    EXPECT_NE(msg, "") << src;
  }
}

TEST_F(LimitsTest, EmptyLanguageBehindAnAllowedStartIsNotDetected) {
  // A known gap: `root ::= "a" root` has no finite derivation, but its start allows "a", so the up-front check
  // passes it (xgrammar does not analyse it either). The sequence writes "aaa..." until max_tokens, never
  // allowed to stop. (A dead end reached later -- a part of the grammar that admits nothing -- leaves the position
  // allowing only the stop token: xgrammar_constraint.cpp.)
  auto g = compile(GrammarKind::kEbnf, R"(root ::= "a" root)");
  auto pos = g->start();
  for (int i = 0; i < 50; ++i) {
    EXPECT_FALSE(allowed(*pos)[size_t(kEos)]);
    ASSERT_TRUE(pos->accept(byte_token('a')));
  }
}

TEST_F(LimitsTest, GrammarOfOnlyTheEmptyStringIsKept) {
  // Not empty: it admits "" (the stop token at once); the up-front check must not refuse it.
  auto g = compile(GrammarKind::kEbnf, R"(root ::= "")");
  auto pos = g->start();
  const std::vector<bool> a = allowed(*pos);
  for (int32_t t = 0; t < toy_logits(); ++t) EXPECT_EQ(a[size_t(t)], t == kEos) << t;
  EXPECT_TRUE(pos->accept(kEos));
}

}  // namespace
}  // namespace tinfer::grammar_test

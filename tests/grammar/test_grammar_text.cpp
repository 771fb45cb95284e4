// Regex, choice and EBNF (GBNF-style) grammars: the strings they take and refuse, and the refusals of bad sources
// as GrammarErrors a client can read (no "[hh:mm:ss] file.cc:NN: " prefix from xgrammar's logging).
#include <gtest/gtest.h>

#include <regex>

#include "grammar/grammar_fixture.h"

namespace tinfer::grammar_test {
namespace {

struct Case {
  const char* text;
  bool ok;
};

class TextGrammarTest : public GrammarTest {
 protected:
  void expect(GrammarKind k, const std::string& src, std::initializer_list<Case> cases) {
    auto g = compile(k, src);
    for (const Case& c : cases) EXPECT_EQ(matches(*g, c.text), c.ok) << src << "\n  on: " << c.text;
  }
  // A refusal's message: non-empty, free of xgrammar's log prefix, holding `want`.
  void expect_refused(GrammarKind k, const std::string& src, const std::string& want) {
    const std::string msg = error_of(k, src);
    EXPECT_NE(msg, "") << src << " compiled";
    EXPECT_EQ(msg.find(".cc:"), std::string::npos) << msg;
    EXPECT_FALSE(std::regex_search(msg, std::regex(R"(\[\d\d:\d\d:\d\d\])"))) << msg;
    EXPECT_NE(msg.find(want), std::string::npos) << src << " -> " << msg;
    std::printf("  %s -> %s\n", src.c_str(), msg.c_str());
  }
};

TEST_F(TextGrammarTest, Regex) {
  expect(GrammarKind::kRegex, "[a-c]+-[0-9]{2,3}(x|yz)?",
         {{"a-12", true}, {"cab-123x", true}, {"b-99yz", true}, {"-12", false}, {"a-1", false}, {"a-1234", false},
          {"a-12y", false}, {"d-12", false}});
  expect(GrammarKind::kRegex, R"(\d+\.\d*|\w\s)", {{"3.", true}, {"10.25", true}, {"a ", true}, {".5", false}});
  expect(GrammarKind::kRegex, "(yes|no)!*", {{"yes", true}, {"no!!!", true}, {"ye", false}, {"yesno", false}});
}

TEST_F(TextGrammarTest, RegexUtf8) {
  expect(GrammarKind::kRegex, "[\xc3\xa9t]+", {{"\xc3\xa9t\xc3\xa9", true}, {"t", true}, {"\xc3", false}, {"e", false}});
}

TEST_F(TextGrammarTest, Choice) {
  expect(GrammarKind::kChoice, R"(["yes", "ye", "no", "say \"hi\"", "a\\b", "tab\there", "\u00e9t\u00e9"])",
         {{"yes", true}, {"ye", true}, {"no", true}, {"say \"hi\"", true}, {"a\\b", true}, {"tab\there", true},
          {"\xc3\xa9t\xc3\xa9", true}, {"y", false}, {"yess", false}, {"", false}, {"NO", false}});
}

TEST_F(TextGrammarTest, ChoiceRefusals) {
  expect_refused(GrammarKind::kChoice, "[]", "non-empty array");
  expect_refused(GrammarKind::kChoice, R"({"a": 1})", "non-empty array");
  expect_refused(GrammarKind::kChoice, R"(["a", 2])", "entry 1");
  expect_refused(GrammarKind::kChoice, R"(["a", ""])", "entry 1");
  expect_refused(GrammarKind::kChoice, R"(["a")", "not valid JSON");
}

TEST_F(TextGrammarTest, EbnfRulesAlternationRepetitionAndClasses) {
  const char* src = R"(root ::= greeting " " name ("," name)* "!"?
greeting ::= "hi" | "hello"
name ::= [A-Z] [a-z]+)";
  expect(GrammarKind::kEbnf, src,
         {{"hi Bo", true}, {"hello Ann,Bo!", true}, {"hi Bo,Cy,Di", true}, {"hi bo", false}, {"hey Bo", false},
          {"hi B", false}, {"hi Bo!!", false}});
  expect(GrammarKind::kEbnf, R"(root ::= [0-9]{2,3} [^a-z0-9]+ x?
x ::= "end")",
         {{"12--", true}, {"123 #end", true}, {"1-", false}, {"1234-", false}, {"12a", false}, {"12-en", false}});
  expect(GrammarKind::kEbnf, R"(root ::= ("a" | "b")+ "\n" [\x41-\x43]*)",
         {{"ab\n", true}, {"b\nACB", true}, {"\nA", false}, {"ab\nD", false}});
}

TEST_F(TextGrammarTest, EbnfSyntaxErrorsAndUndefinedRules) {
  expect_refused(GrammarKind::kEbnf, R"(root ::= "a)", "");
  expect_refused(GrammarKind::kEbnf, R"(root ::= item)", "item");
  expect_refused(GrammarKind::kEbnf, R"(start ::= "a")", "root");
  expect_refused(GrammarKind::kEbnf, R"(root ::= "a" | | "b")", "");
  expect_refused(GrammarKind::kEbnf, R"(root ::= [a-)", "");
  expect_refused(GrammarKind::kEbnf, R"(root = "a")", "");
  expect_refused(GrammarKind::kEbnf, "root ::= \"a\"{3,1}", "");
}

TEST_F(TextGrammarTest, RegexSyntaxErrors) {
  expect_refused(GrammarKind::kRegex, "(ab", "");
  expect_refused(GrammarKind::kRegex, "[z-a]", "");
  expect_refused(GrammarKind::kRegex, "a{3,1}", "");
}

}  // namespace
}  // namespace tinfer::grammar_test

// The allowed-token mask against brute force over every token of the toy vocabulary (every byte, the stop token,
// the multi-byte pieces, the padding ids past the vocabulary):
//   - a choice grammar's language is finite, so the oracle is direct: at a prefix p of some choice, token t is
//     allowed iff p + bytes(t) is a prefix of some choice; the stop token iff p is a whole choice;
//   - for regex and schema grammars, bit t of the mask equals whether a fork of the position accepts t (padding
//     ids: never allowed).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "grammar/grammar_fixture.h"

namespace tinfer::grammar_test {
namespace {

class MaskTest : public GrammarTest {};

bool prefix_of_some(const std::string& s, const std::vector<std::string>& choices) {
  for (const std::string& c : choices)
    if (c.compare(0, s.size(), s) == 0 && s.size() <= c.size()) return true;
  return false;
}

TEST_F(MaskTest, ChoiceMaskEqualsPrefixOracleAtEveryPrefix) {
  const std::vector<std::string> choices = {"yes", "ye", "no", "abc", "null", "true!", "x\xc3\xa9",
                                            "\xc3\xa9t\xc3\xa9", "{\"a\"}", "nob"};
  std::string json = "[";
  for (const std::string& c : choices) json += (json.size() > 1 ? ", " : "") + nlohmann::json(c).dump();
  json += "]";
  auto g = compile(GrammarKind::kChoice, json);
  int checked = 0;
  for (const std::string& c : choices) {
    for (size_t len = 0; len <= c.size(); ++len) {
      const std::string p = c.substr(0, len);
      auto pos = g->start();
      ASSERT_LT(feed_bytes(*pos, p), 0) << p;
      const std::vector<bool> a = allowed(*pos);
      for (int32_t t = 0; t < toy_logits(); ++t, ++checked) {
        bool want;
        if (t >= toy().n_vocab()) want = false;  // padding
        else if (t == kEos) want = std::find(choices.begin(), choices.end(), p) != choices.end();
        else want = prefix_of_some(p + toy().token_bytes(t), choices);
        ASSERT_EQ(a[size_t(t)], want) << "prefix '" << p << "' token " << t << " '" << toy().token_bytes(t) << "'";
      }
    }
  }
  std::printf("  %d (prefix, token) pairs checked\n", checked);
}

// At every step of `tokens` (accepted in turn, then the stop token), mask bit t == fork().accept(t) for all t.
void expect_mask_equals_accept(const TokenGrammar& g, const std::vector<int32_t>& tokens, const std::string& what) {
  auto pos = g.start();
  for (size_t step = 0; step <= tokens.size(); ++step) {
    const std::vector<bool> a = allowed(*pos);
    for (int32_t t = toy().n_vocab(); t < toy_logits(); ++t) ASSERT_FALSE(a[size_t(t)]) << "padding " << t;
    for (int32_t t = 0; t < toy().n_vocab(); ++t) {
      auto f = pos->fork();
      ASSERT_EQ(a[size_t(t)], f->accept(t)) << what << " step " << step << " token " << t;
    }
    const int32_t next = step < tokens.size() ? tokens[step] : kEos;
    ASSERT_TRUE(a[size_t(next)]) << what << " step " << step;
    ASSERT_TRUE(pos->accept(next)) << what << " step " << step;
  }
  EXPECT_TRUE(pos->terminated()) << what;
}

std::vector<int32_t> as_bytes(const std::string& s) {
  std::vector<int32_t> ids;
  for (char c : s) ids.push_back(byte_token(c));
  return ids;
}

TEST_F(MaskTest, RegexAndSchemaMasksEqualForkAccept) {
  struct Walk {
    GrammarKind kind;
    const char* src;
    std::vector<std::string> texts;
  };
  const std::vector<Walk> walks = {
      {GrammarKind::kRegex, "(yes|no|abc)+[\xc3\xa9x]?", {"yesno", "abc\xc3\xa9", "nox"}},
      {GrammarKind::kJsonSchema,
       R"({"type": "object", "properties": {"name": {"type": "string"}, "ok": {"type": "boolean"},
           "n": {"type": ["integer", "null"]}}, "required": ["name", "ok"], "additionalProperties": false})",
       {R"({"name": "ye\u00e9", "ok": true, "n": null})", R"({"name": "", "ok": false})",
        "{\"name\": \"x\xc3\xa9\", \"ok\": false, \"n\": -12}"}},
      {GrammarKind::kJsonObject, "", {R"({"a": [true, null, {"b": "no"}]})"}},
  };
  for (const Walk& w : walks) {
    auto g = compile(w.kind, w.src);
    for (const std::string& text : w.texts) {
      expect_mask_equals_accept(*g, as_bytes(text), text + " (bytes)");
      expect_mask_equals_accept(*g, toy().encode(text, false), text + " (pieces)");
    }
  }
}

}  // namespace
}  // namespace tinfer::grammar_test

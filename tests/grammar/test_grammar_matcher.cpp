// One sequence's position in a grammar (TokenConstraint): forks are independent, rollback restores the previous
// mask exactly, forced_tokens spells the grammar's only continuation, and a terminated position behaves.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/grammar_fixture.h"

namespace tinfer::grammar_test {
namespace {

class MatcherTest : public GrammarTest {
 protected:
  const char* kSchema = R"({"type": "object", "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
                           "required": ["name", "count"], "additionalProperties": false})";
};

TEST_F(MatcherTest, ForksAreIndependent) {
  auto g = schema(kSchema);
  auto a = g->start();
  ASSERT_LT(feed_bytes(*a, R"({"name": "x)"), 0);
  auto b = a->fork();
  const std::vector<bool> before = allowed(*a);
  ASSERT_LT(feed_bytes(*b, R"(", "count": 12})"), 0);  // b runs to the end ...
  EXPECT_EQ(allowed(*a), before);                     // ... a has not moved
  ASSERT_LT(feed_bytes(*a, R"(y", "count": 3})"), 0);  // a goes its own way
  EXPECT_TRUE(a->accept(kEos));
  EXPECT_FALSE(b->terminated());
  EXPECT_TRUE(b->accept(kEos));
  EXPECT_TRUE(a->terminated() && b->terminated());
  auto c = a->fork();  // a fork of a terminated position is terminated
  EXPECT_TRUE(c->terminated());
}

std::vector<uint32_t> raw_mask(TokenConstraint& c) {
  std::vector<uint32_t> m(mask_words(toy_logits()), 0);
  EXPECT_TRUE(c.fill_mask(m));
  return m;
}

TEST_F(MatcherTest, RollbackRestoresThePreviousMaskExactly) {
  auto g = schema(kSchema);
  auto pos = g->start();
  const std::string text = R"({"name": "ab", "count": 7})";
  std::vector<std::vector<uint32_t>> masks;  // masks[i]: the mask after i accepted bytes
  for (char ch : text) {
    masks.push_back(raw_mask(*pos));
    ASSERT_TRUE(pos->accept(byte_token(ch)));
  }
  masks.push_back(raw_mask(*pos));
  for (size_t back = 1; back <= text.size(); back += 3) {  // 1, 4, 7 ... bytes back, then forward again
    pos->rollback(int(back));
    EXPECT_EQ(raw_mask(*pos), masks[text.size() - back]) << back;
    ASSERT_LT(feed_bytes(*pos, text.substr(text.size() - back)), 0);
    EXPECT_EQ(raw_mask(*pos), masks.back());
  }
  pos->rollback(1000);  // more than was accepted: back to the start
  EXPECT_EQ(raw_mask(*pos), masks[0]);
}

TEST_F(MatcherTest, RejectedTokenLeavesStateUnchanged) {
  auto g = schema(kSchema);
  auto pos = g->start();
  ASSERT_LT(feed_bytes(*pos, R"({"na)"), 0);
  const auto before = raw_mask(*pos);
  EXPECT_FALSE(pos->accept(byte_token('x')));
  EXPECT_FALSE(pos->accept(kEos));
  EXPECT_EQ(raw_mask(*pos), before);
  pos->rollback(1);  // undoes the 'a', not a refused token
  ASSERT_TRUE(pos->accept(byte_token('a')));
  EXPECT_EQ(raw_mask(*pos), before);
}

TEST_F(MatcherTest, TerminatedPositionRollsBackAndMasksNothingButStops) {
  auto g = schema(R"({"type": "boolean"})");
  auto pos = g->start();
  ASSERT_LT(feed_bytes(*pos, "true"), 0);
  const auto before_stop = raw_mask(*pos);
  ASSERT_TRUE(pos->accept(kEos));
  ASSERT_TRUE(pos->terminated());
  // The engine may ask for a mask past the end (a speculative verify row): that must not break the position.
  std::vector<uint32_t> m(mask_words(toy_logits()), ~0u);
  EXPECT_TRUE(pos->fill_mask(m));
  for (int32_t t = 0; t < toy_logits(); ++t) EXPECT_EQ((m[size_t(t) / 32] >> (t % 32)) & 1u, t == kEos ? 1u : 0u) << t;
  pos->rollback(1);  // a rejected draft's stop token
  EXPECT_FALSE(pos->terminated());
  EXPECT_EQ(raw_mask(*pos), before_stop);
}

TEST_F(MatcherTest, DeadEndAllowsOnlyTheStopToken) {
  // "a" leads into a rule that admits nothing: xgrammar's mask there is empty, which would leave the sampler no
  // token at all. The position allows the stop token alone instead, so the sequence ends.
  auto g = compile(GrammarKind::kEbnf, "root ::= \"a\" nothing | \"b\"\nnothing ::= [^\\x00-\\U0010FFFF]");
  auto pos = g->start();
  ASSERT_TRUE(pos->accept(byte_token('a')));
  const std::vector<bool> a = allowed(*pos);
  for (int32_t t = 0; t < toy_logits(); ++t) EXPECT_EQ(a[size_t(t)], t == kEos) << t;
  EXPECT_TRUE(pos->accept(kEos));
  EXPECT_TRUE(pos->terminated());
  EXPECT_TRUE(matches(*g, "b"));
}

TEST_F(MatcherTest, ForcedTokensSpellTheFixedKey) {
  const std::string key = "a_rather_long_fixed_key_name_that_nothing_else_starts_with";
  auto g = schema(R"({"type": "object", "properties": {")" + key +
                  R"(": {"type": "integer"}}, "required": [")" + key + R"("], "additionalProperties": false})");
  auto pos = g->start();
  const std::vector<int32_t> forced = pos->forced_tokens();
  const std::string want = "{\"" + key + "\": ";
  EXPECT_EQ(bytes_of(forced), want);
  EXPECT_LT(forced.size(), want.size());  // multi-byte pieces used where they fit ("{\"", "\": ", "name")
  EXPECT_EQ(forced.front(), toy().token_id("{\""));
  EXPECT_EQ(allowed(*pos), allowed(*g->start()));  // forced_tokens does not advance
  for (int32_t t : forced) ASSERT_TRUE(pos->accept(t)) << t;
  EXPECT_TRUE(pos->forced_tokens().empty());  // an integer: several continuations
  ASSERT_LT(feed_bytes(*pos, "5"), 0);
  EXPECT_TRUE(pos->forced_tokens().empty() || bytes_of(pos->forced_tokens()) == "}");
}

TEST_F(MatcherTest, MaskBeyondVocabularyIsClear) {
  auto g = compile(GrammarKind::kJsonObject, "");
  const std::vector<bool> a = allowed(*g->start());
  for (int32_t t = toy().n_vocab(); t < toy_logits(); ++t) EXPECT_FALSE(a[size_t(t)]) << t;
  EXPECT_TRUE(a[size_t(byte_token('{'))]);
  EXPECT_TRUE(a[size_t(toy().token_id("{\""))]);
  EXPECT_FALSE(a[size_t(kEos)]);
}

}  // namespace
}  // namespace tinfer::grammar_test

// GrammarCompiler's cache: a spec compiles once and is then a hit; the byte bound evicts least recently used first;
// concurrent compiles of one spec share one compile and one grammar; a failing spec is counted and not cached.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "grammar/grammar_fixture.h"

namespace tinfer::grammar_test {
namespace {

GrammarSpec enum_schema(int i) {  // distinct specs of about the same compiled size
  return {GrammarKind::kJsonSchema, R"({"type": "object", "properties": {"k)" + std::to_string(i) +
                                        R"(": {"enum": ["a", "b", "c"]}}, "required": ["k)" + std::to_string(i) + R"("]})"};
}

TEST(GrammarCache, SameSpecTwiceCompilesOnce) {
  auto c = toy_compiler();
  auto a = c->compile(enum_schema(0));
  auto b = c->compile(enum_schema(0));
  EXPECT_EQ(a, b);
  const grammar::GrammarStats s = c->stats();
  EXPECT_EQ(s.compiles, 1u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.cached, 1u);
  EXPECT_GT(s.cache_bytes, 0);
  EXPECT_GT(s.compile_seconds, 0.0);
  // The same source under another kind is another grammar ("true": any JSON value, or the regex's four letters).
  auto any = c->compile(GrammarSpec{GrammarKind::kJsonSchema, "true"});
  auto word = c->compile(GrammarSpec{GrammarKind::kRegex, "true"});
  EXPECT_NE(any, word);
  EXPECT_EQ(c->stats().compiles, 3u);
  EXPECT_TRUE(matches(*any, "[1]"));
  EXPECT_FALSE(matches(*word, "[1]"));
}

TEST(GrammarCache, ByteBoundEvictsLeastRecentlyUsed) {
  const int64_t one = [] {
    auto c = toy_compiler();
    c->compile(enum_schema(0));
    return c->stats().cache_bytes;
  }();
  grammar::GrammarCompilerConfig cfg;
  cfg.cache_bytes = one * 5 / 2;  // room for two
  auto c = toy_compiler(cfg);
  for (int i = 0; i < 8; ++i) {
    c->compile(enum_schema(i));
    const grammar::GrammarStats s = c->stats();
    EXPECT_LE(s.cache_bytes, cfg.cache_bytes) << i;
    EXPECT_LE(s.cached, 2u) << i;
  }
  EXPECT_EQ(c->stats().compiles, 8u);
  c->compile(enum_schema(7));  // the newest stayed
  EXPECT_EQ(c->stats().cache_hits, 1u);
  c->compile(enum_schema(6));  // so did the one before it; now 6 is the most recent and 7 the least
  EXPECT_EQ(c->stats().cache_hits, 2u);
  c->compile(enum_schema(0));  // long evicted: compiles again, evicting 7
  EXPECT_EQ(c->stats().compiles, 9u);
  c->compile(enum_schema(6));
  EXPECT_EQ(c->stats().cache_hits, 3u);
  c->compile(enum_schema(7));
  EXPECT_EQ(c->stats().compiles, 10u);
}

TEST(GrammarCache, GrammarLargerThanTheBoundIsServedNotKept) {
  grammar::GrammarCompilerConfig cfg;
  cfg.cache_bytes = 1;
  auto c = toy_compiler(cfg);
  auto g = c->compile(enum_schema(0));
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(matches(*g, R"({"k0": "b"})"));  // still usable after its eviction
  EXPECT_EQ(c->stats().cached, 0u);
  EXPECT_EQ(c->stats().cache_bytes, 0);
}

TEST(GrammarCache, ConcurrentCompilesOfOneSpecShareOneCompile) {
  auto c = toy_compiler();
  // Big enough that the compile takes a while, so the threads overlap it.
  std::string props;
  for (int i = 0; i < 250; ++i) props += (i ? ", " : "") + std::string("\"p") + std::to_string(i) + "\": {\"type\": \"string\"}";
  const GrammarSpec spec{GrammarKind::kJsonSchema, R"({"type": "object", "properties": {)" + props + "}}"};
  std::vector<std::shared_ptr<const TokenGrammar>> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = c->compile(spec); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
  EXPECT_NE(got[0], nullptr);
  EXPECT_EQ(c->stats().compiles, 1u);
  EXPECT_EQ(c->stats().cache_hits, 3u);
}

TEST(GrammarCache, ConcurrentCompilesOfAFailingSpecAllFail) {
  auto c = toy_compiler();
  const GrammarSpec bad{GrammarKind::kEbnf, "root ::= undefined_rule"};
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      try {
        c->compile(bad);
      } catch (const GrammarError&) {
        ++errors;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 4);
  EXPECT_EQ(c->stats().cached, 0u);
  EXPECT_EQ(c->stats().compiles, 0u);
}

TEST(GrammarCache, FailingSpecIsCountedAndRetried) {
  auto c = toy_compiler();
  const GrammarSpec bad{GrammarKind::kJsonSchema, R"({"type": "array", "uniqueItems": true})"};
  EXPECT_THROW(c->compile(bad), GrammarError);
  EXPECT_THROW(c->compile(bad), GrammarError);
  const grammar::GrammarStats s = c->stats();
  EXPECT_EQ(s.failures, 2u);  // tried again, not served from the cache
  EXPECT_EQ(s.cache_hits, 0u);
  EXPECT_EQ(s.cached, 0u);
  EXPECT_EQ(s.compiles, 0u);
  EXPECT_EQ(s.cache_bytes, 0);
  c->compile(enum_schema(1));  // the compiler is fine afterwards
  EXPECT_EQ(c->stats().compiles, 1u);
}

}  // namespace
}  // namespace tinfer::grammar_test

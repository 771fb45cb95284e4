// Random texts made of the formats' own fragments (markers, brackets, quotes, fences, separators): no crash, every
// chunking gives the one-shot result, and an output in which no call completed comes back as content byte for byte
// (nothing withheld is ever lost).
#include <gtest/gtest.h>

#include <random>

#include "text/tool_calls/reasoning.h"
#include "toolcall/parser_test_util.h"

namespace tinfer::toolcall {
namespace {

const std::vector<std::string> kFragments = {"<tool_call>",
                                             "</tool_call>",
                                             "{",
                                             "}",
                                             "\"name\"",
                                             ": ",
                                             "\"f\"",
                                             ", ",
                                             "\"arguments\"",
                                             "\"parameters\"",
                                             "[",
                                             "]",
                                             " ",
                                             "\n",
                                             "```",
                                             "[TOOL_CALLS]",
                                             "[ARGS]",
                                             "[CALL_ID]",
                                             "<function=",
                                             "f>",
                                             "<parameter=",
                                             "k>",
                                             "</parameter>",
                                             "</function>",
                                             "x",
                                             "(",
                                             ")",
                                             "=",
                                             "'",
                                             "\"",
                                             "1",
                                             "-",
                                             "<|python_tag|>",
                                             ";",
                                             "\\",
                                             "é",
                                             "true",
                                             "<think>",
                                             "</think>",
                                             "<|python_start|>",
                                             "g(a=1)",
                                             "{\"name\": \"f\", \"arguments\": {}}",
                                             "<"};

std::string random_text(std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, kFragments.size() - 1), len(1, 24);
  std::string s;
  for (size_t n = len(rng); n > 0; --n) s += kFragments[pick(rng)];
  return s;
}

TEST(ToolCallFuzz, ChunkingNeverChangesTheResult) {
  std::mt19937_64 rng(2026);
  for (int iter = 0; iter < 400; ++iter) {
    std::string text = random_text(rng);
    for (const auto& f : tool_call_formats()) {
      SCOPED_TRACE(std::string(f.name) + ": " + text);
      auto one = testing::run(f, text, {});
      EXPECT_EQ(one.problem, "");
      for (const auto& other : {testing::run(f, text, {1}), testing::run_random(f, text, iter)}) {
        EXPECT_EQ(other.content, one.content);
        EXPECT_EQ(other.problem, "");
        ASSERT_EQ(other.final_calls.size(), one.final_calls.size());
        for (size_t i = 0; i < one.final_calls.size(); ++i)
          EXPECT_EQ(other.final_calls[i].arguments, one.final_calls[i].arguments);
        ASSERT_EQ(other.calls.size(), one.calls.size());
      }
      if (one.final_calls.empty()) {
        EXPECT_EQ(one.content, text);
      }
    }
  }
}

TEST(ToolCallFuzz, ReasoningChunking) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 400; ++iter) {
    std::string text = random_text(rng);
    for (bool starts_in : {false, true}) {
      ReasoningParser whole(starts_in), bytes(starts_in);
      ParseDelta a = whole.push(text);
      a.append(whole.finish());
      ParseDelta b;
      for (char c : text) b.append(bytes.push(std::string(1, c)));
      b.append(bytes.finish());
      EXPECT_EQ(a.content, b.content) << text;
      EXPECT_EQ(a.reasoning, b.reasoning) << text;
      if (!starts_in && !text.starts_with("<think>") && !text.starts_with(" ") && !text.starts_with("\n")) {
        EXPECT_EQ(a.content, text);
      }
    }
  }
}

}  // namespace
}  // namespace tinfer::toolcall

// ReasoningParser: <think>…</think> to reasoning, at every chunking; template_opens_reasoning on the real templates.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "text/tool_calls/reasoning.h"

namespace tinfer::toolcall {
namespace {

struct Split {
  std::string reasoning, content;
};

Split run(bool starts_in, const std::string& text, const std::vector<size_t>& sizes) {
  ReasoningParser p(starts_in);
  Split s;
  size_t pos = 0;
  for (size_t i = 0; pos < text.size(); ++i) {
    size_t n = sizes.empty() ? text.size() : sizes[i % sizes.size()];
    auto d = p.push(std::string_view(text).substr(pos, n));
    EXPECT_TRUE(d.calls.empty());
    s.reasoning += d.reasoning, s.content += d.content;
    pos += n;
  }
  auto d = p.finish();
  s.reasoning += d.reasoning, s.content += d.content;
  return s;
}

Split parse(bool starts_in, const std::string& text) {
  Split one = run(starts_in, text, {});
  std::vector<std::vector<size_t>> chunkings = {{1}, {3}, {2, 7}};
  for (size_t cut = 1; cut < text.size(); ++cut) chunkings.push_back({cut, text.size()});
  for (const auto& c : chunkings) {
    Split o = run(starts_in, text, c);
    EXPECT_EQ(o.reasoning, one.reasoning) << c[0];
    EXPECT_EQ(o.content, one.content) << c[0];
  }
  return one;
}

TEST(Reasoning, PromptOpensTheBlock) {
  auto s = parse(true, "Okay, 2+2.\nThat is 4.\n</think>\n\nThe answer is 4.");
  EXPECT_EQ(s.reasoning, "Okay, 2+2.\nThat is 4.");
  EXPECT_EQ(s.content, "The answer is 4.");
  auto again = parse(true, "<think>\nhmm\n</think>\n\nyes");  // a model that opens it once more
  EXPECT_EQ(again.reasoning, "hmm");
  EXPECT_EQ(again.content, "yes");
}

TEST(Reasoning, OutputOpensTheBlock) {
  auto s = parse(false, "<think>\nLet me see: x < y.\n</think>\n\n{\"a\": 1}");
  EXPECT_EQ(s.reasoning, "Let me see: x < y.");
  EXPECT_EQ(s.content, "{\"a\": 1}");
  auto lead = parse(false, "\n  <think>r</think>c");
  EXPECT_EQ(lead.reasoning, "r");
  EXPECT_EQ(lead.content, "c");
}

TEST(Reasoning, NoBlockIsAllContentExactly) {
  for (std::string text : {"Hello </think> world", "  <thin", "<b>bold</b>", "", "\n\n", "x <think>y</think>"}) {
    auto s = parse(false, text);
    EXPECT_EQ(s.content, text);
    EXPECT_EQ(s.reasoning, "");
  }
}

TEST(Reasoning, UnclosedIsAllReasoning) {
  auto s = parse(true, "still thinking about <this");
  EXPECT_EQ(s.reasoning, "still thinking about <this");
  EXPECT_EQ(s.content, "");
  auto t = parse(false, "<think>\nstill </thi");
  EXPECT_EQ(t.reasoning, "still </thi");
  EXPECT_EQ(t.content, "");
}

TEST(Reasoning, OnlyTheFirstCloseCounts) {
  auto s = parse(true, "a</think>b</think>c");
  EXPECT_EQ(s.reasoning, "a");
  EXPECT_EQ(s.content, "b</think>c");
}

std::string read_template(const std::string& name) {
  std::ifstream f(std::string(TINFER_SOURCE_DIR) + "/tests/data/chat_templates/templates/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Reasoning, TemplatesThatOpenTheBlock) {
  EXPECT_TRUE(template_opens_reasoning(read_template("deepseek-r1-distill.jinja")));
  for (const char* t : {"qwen3.jinja", "qwen2.5.jinja", "llama-3.1.jinja", "smollm2.jinja", "mistral-v0.3-tools.jinja"})
    EXPECT_FALSE(template_opens_reasoning(read_template(t))) << t;
  EXPECT_TRUE(template_opens_reasoning("{{ messages[0].content }}<think>\n"));
  EXPECT_FALSE(template_opens_reasoning("{% if %}"));  // unparsable: false, no throw
}

}  // namespace
}  // namespace tinfer::toolcall

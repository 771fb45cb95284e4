// "Real model outputs" without a model: each real chat template renders an assistant turn holding tool calls (the
// exact text the model was trained to write); the row that template detects parses that text back into the same
// calls, in one piece and at every chunking.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "text/chat/chat_template.h"
#include "text/tool_calls/reasoning.h"
#include "toolcall/parser_test_util.h"

namespace tinfer::toolcall {
namespace {

using Json = nlohmann::ordered_json;

std::string read_template(const std::string& name) {
  std::ifstream in(std::string(TINFER_SOURCE_DIR) + "/tests/data/chat_templates/templates/" + name);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

ChatMessage message(const std::string& role, const std::string& content, const Json& extra = Json()) {
  ChatMessage m;
  m.role = role;
  m.content = content;
  m.content_null = content.empty() && !extra.is_null();
  if (!extra.is_null()) m.extra_json = extra.dump();
  return m;
}

// The assistant turn the template renders after `user` for `calls` (OpenAI tool_calls, arguments as objects), up
// to its end-of-turn token.
std::string assistant_text(const std::string& tmpl, const Json& calls, const std::string& eot) {
  ChatTemplate t(tmpl, "test");
  ChatOptions opts;
  opts.tools_json = R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])";
  opts.bos_token = "<s>", opts.eos_token = eot;
  opts.clock = [](const std::string&) { return std::string("26 Jul 2024"); };
  std::vector<ChatMessage> msgs = {message("user", "Weather in Paris and Oslo?")};
  opts.add_generation_prompt = true;
  std::string prompt = t.render(msgs, opts).text;
  msgs.push_back(message("assistant", "", Json{{"tool_calls", calls}}));
  opts.add_generation_prompt = false;
  std::string full = t.render(msgs, opts).text;
  EXPECT_TRUE(full.starts_with(prompt)) << full;
  std::string turn = full.substr(prompt.size());
  size_t end = turn.rfind(eot);
  return end == std::string::npos ? turn : turn.substr(0, end);
}

Json call(const std::string& id, const std::string& name, const Json& args) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}};
}

void expect_round_trip(const std::string& file, const std::string& eot, const char* want_format, size_t n_calls) {
  std::string tmpl = read_template(file);
  const ToolCallFormat& f = detect_tool_call_format(tmpl);
  EXPECT_STREQ(f.name, want_format) << file;
  Json calls = Json::array({call("abcDEF123", "get_weather", {{"city", "Paris"}, {"days", 3}, {"units", {"c", "f"}}}),
                            call("ghiJKL456", "get_weather", {{"city", "Oslo"}})});
  calls.erase(calls.begin() + n_calls, calls.end());
  std::string text = assistant_text(tmpl, calls, eot);
  SCOPED_TRACE(file + ": " + text);
  auto one = testing::run(f, text, {});
  for (size_t cut = 1; cut < text.size(); ++cut) {
    auto split = testing::run(f, text, {cut, text.size()});
    EXPECT_EQ(split.content, one.content);
    ASSERT_EQ(split.final_calls.size(), one.final_calls.size());
  }
  EXPECT_EQ(one.content, "");
  ASSERT_EQ(one.final_calls.size(), n_calls);
  for (size_t i = 0; i < n_calls; ++i) {
    EXPECT_EQ(one.final_calls[i].name, "get_weather");
    EXPECT_EQ(Json::parse(one.final_calls[i].arguments), calls[i]["function"]["arguments"]);
  }
}

TEST(ToolCallTemplates, Qwen25WritesHermes) { expect_round_trip("qwen2.5.jinja", "<|im_end|>", "hermes", 2); }
TEST(ToolCallTemplates, Qwen3WritesHermesAfterItsReasoning) {
  // Qwen3 writes an (empty) <think> block first: the reasoning parser goes in front of the tool-call parser.
  std::string tmpl = read_template("qwen3.jinja");
  EXPECT_FALSE(template_opens_reasoning(tmpl));
  Json calls = Json::array({call("abcDEF123", "get_weather", {{"city", "Paris"}})});
  std::string text = assistant_text(tmpl, calls, "<|im_end|>");
  ASSERT_TRUE(text.starts_with("<think>")) << text;
  for (size_t cut = 0; cut < text.size(); ++cut) {
    auto p = reasoning_then_tools(false, detect_tool_call_format(tmpl).make_parser());
    ParseDelta d = p->push(text.substr(0, cut));
    d.append(p->push(text.substr(cut)));
    d.append(p->finish());
    EXPECT_EQ(d.content, "");
    EXPECT_EQ(d.reasoning, "");
    ASSERT_EQ(d.calls.size(), 1u);
    EXPECT_EQ(d.calls[0].name, "get_weather");
    ASSERT_EQ(p->calls().size(), 1u);
    EXPECT_EQ(p->calls()[0].arguments, R"({"city": "Paris"})");
    EXPECT_EQ(d.calls[0].arguments, p->calls()[0].arguments);
  }
}
TEST(ToolCallTemplates, Llama31WritesJson) { expect_round_trip("llama-3.1.jinja", "<|eot_id|>", "llama3_json", 1); }
TEST(ToolCallTemplates, Llama32WritesJson) { expect_round_trip("llama-3.2.jinja", "<|eot_id|>", "llama3_json", 1); }
TEST(ToolCallTemplates, MistralWritesToolCalls) { expect_round_trip("mistral-v0.3-tools.jinja", "</s>", "mistral", 2); }

}  // namespace
}  // namespace tinfer::toolcall

// The structural tags compiled by xgrammar itself (built only where the build has the tinfer_xgrammar target): over
// a byte vocabulary, each tag accepts the text its family's template writes and rejects what the choice forbids
// (wrong argument types, missing required keys, a second call when !parallel, text before a required call).
#include <gtest/gtest.h>
#include <xgrammar/xgrammar.h>

#include <nlohmann/json.hpp>

#include "text/tool_calls/reasoning.h"
#include "text/tool_calls/tool_call_format.h"

namespace tinfer::toolcall {
namespace {

using Json = nlohmann::json;
using M = ToolChoice::Mode;

constexpr int32_t kStop = 256;

// 256 one-byte tokens and a stop token: AcceptString then AcceptToken(stop) says "the text is a complete output".
xgrammar::GrammarCompiler& compiler() {
  static xgrammar::TokenizerInfo info = [] {
    std::vector<std::string> vocab;
    for (int i = 0; i < 256; ++i) vocab.emplace_back(1, static_cast<char>(i));
    vocab.push_back("</s>");
    return xgrammar::TokenizerInfo(vocab, xgrammar::VocabType::RAW, std::nullopt, std::vector<int32_t>{kStop});
  }();
  static xgrammar::GrammarCompiler c(info, 1, false);
  return c;
}

bool accepts(const std::string& tag, const std::string& text) {
  xgrammar::GrammarMatcher m(compiler().CompileStructuralTag(tag));
  return m.AcceptString(text) && m.AcceptToken(kStop);
}

const Json kTools = Json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"type": "string", "enum": ["c", "f"]}},
    "required": ["city"]}}},
  {"type": "function", "function": {"name": "get_time"}}])");

std::string tag(const char* format, M mode, bool parallel = true, const char* name = "") {
  return find_tool_call_format(format)->structural_tag(kTools, ToolChoice{mode, name, parallel});
}

TEST(StructuralTagsXgrammar, Hermes) {
  std::string w =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>";
  std::string t = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  std::string named = tag("hermes", M::kNamed, true, "get_weather");
  EXPECT_TRUE(accepts(named, w));
  EXPECT_FALSE(accepts(named, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\n</tool_call>"));
  EXPECT_FALSE(accepts(named, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 3}}\n</tool_call>"));
  EXPECT_FALSE(accepts(named, t));
  EXPECT_TRUE(accepts(tag("hermes", M::kRequired), w + "\n" + t));
  EXPECT_FALSE(accepts(tag("hermes", M::kRequired), "Hi " + w));
  EXPECT_FALSE(accepts(tag("hermes", M::kRequired), "Just text."));
  EXPECT_FALSE(accepts(tag("hermes", M::kRequired, false), w + "\n" + t));
  EXPECT_TRUE(accepts(tag("hermes", M::kRequired, false), t));
  EXPECT_TRUE(accepts(tag("hermes", M::kAuto), "Just text."));
  EXPECT_TRUE(accepts(tag("hermes", M::kAuto), "Sure. " + w + " done"));
  EXPECT_FALSE(accepts(tag("hermes", M::kAuto), "<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>"));
}

TEST(StructuralTagsXgrammar, Llama3Json) {
  std::string w = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
  EXPECT_TRUE(accepts(tag("llama3_json", M::kNamed, true, "get_weather"), w));
  EXPECT_TRUE(accepts(tag("llama3_json", M::kRequired), w + "; {\"name\": \"get_time\", \"parameters\": {}}"));
  EXPECT_FALSE(accepts(tag("llama3_json", M::kRequired), "{\"name\": \"get_weather\", \"parameters\": {}}"));
  EXPECT_TRUE(accepts(tag("llama3_json", M::kAuto), w));
}

TEST(StructuralTagsXgrammar, Mistral) {
  std::string w = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
  EXPECT_TRUE(accepts(tag("mistral", M::kNamed, true, "get_weather"), "[TOOL_CALLS] [" + w + "]"));
  EXPECT_TRUE(
      accepts(tag("mistral", M::kRequired), "[TOOL_CALLS] [" + w + ", {\"name\": \"get_time\", \"arguments\": {}}]"));
  EXPECT_FALSE(accepts(tag("mistral", M::kRequired, false),
                       "[TOOL_CALLS] [" + w + ", {\"name\": \"get_time\", \"arguments\": {}}]"));
  EXPECT_TRUE(accepts(tag("mistral", M::kAuto), "ok [TOOL_CALLS] [" + w + "]"));
}

TEST(StructuralTagsXgrammar, Qwen3Coder) {
  std::string w =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n"
      "</parameter>\n</function>\n</tool_call>";
  std::string named = tag("qwen3_coder", M::kNamed, true, "get_weather");
  EXPECT_TRUE(accepts(named, w));
  EXPECT_FALSE(accepts(named,
                       "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n"
                       "</tool_call>"));  // city is required
  EXPECT_FALSE(accepts(named,
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
                       "<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>"));
  // A call without parameters, as the template writes it.
  EXPECT_TRUE(
      accepts(tag("qwen3_coder", M::kRequired), w + "\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>"));
  EXPECT_TRUE(accepts(tag("qwen3_coder", M::kAuto), "x " + w));
}

TEST(StructuralTagsXgrammar, Pythonic) {
  std::string req = tag("pythonic", M::kRequired);
  EXPECT_TRUE(accepts(req, "[get_weather(city='Paris', days=3), get_time()]"));
  EXPECT_TRUE(accepts(req, "[get_weather(city=\"Paris\", unit='c')]"));
  EXPECT_FALSE(accepts(req, "[get_weather(city=\"Paris\", unit='k')]"));
  EXPECT_FALSE(accepts(req, "[get_weather(days=3)]"));
  EXPECT_FALSE(accepts(req, "[get_weather(city='P', days='3')]"));
  EXPECT_TRUE(accepts(tag("pythonic", M::kNamed, true, "get_time"), "[get_time()]"));
  EXPECT_FALSE(accepts(tag("pythonic", M::kRequired, false), "[get_time(), get_time()]"));
}

TEST(StructuralTagsXgrammar, DeclaredOrderFromText) {
  std::string tools = R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}, "required": ["zeta", "alpha"]}}}])";
  const ToolCallFormat& h = *find_tool_call_format("hermes");
  std::string call = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"zeta\": \"z\", \"alpha\": 1}}\n</tool_call>";
  EXPECT_TRUE(accepts(h.structural_tag_text(tools, {M::kNamed, "f", true}), call));
  const ToolCallFormat& py = *find_tool_call_format("pythonic");
  EXPECT_TRUE(accepts(py.structural_tag_text(tools, {M::kNamed, "f", true}), "[f(zeta='z', alpha=1)]"));
  EXPECT_FALSE(accepts(py.structural_tag_text(tools, {M::kNamed, "f", true}), "[f(alpha=1, zeta='z')]"));
}

TEST(StructuralTagsXgrammar, ReasoningThenAnswer) {
  Json answer = {
      {"type", "json_schema"},
      {"json_schema", {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}, {"required", {"a"}}}}};
  EXPECT_TRUE(accepts(reasoning_then(answer, true), "hmm, let me think\n</think>\n\n{\"a\": 1}"));
  EXPECT_FALSE(accepts(reasoning_then(answer, true), "hmm\n</think>\n\n{\"a\": \"x\"}"));
  EXPECT_FALSE(accepts(reasoning_then(answer, true), "{\"a\": 1}"));  // the prompt opened the block: close it first
  EXPECT_TRUE(accepts(reasoning_then(answer, false), "<think>\nok\n</think>\n\n{\"a\": 1}"));
  EXPECT_TRUE(accepts(reasoning_then(answer, false), "{\"a\": 1}"));
  Json calls = Json::parse(tag("hermes", M::kRequired))["format"];
  EXPECT_TRUE(accepts(reasoning_then(calls, true),
                      "think\n</think>\n\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
}

}  // namespace
}  // namespace tinfer::toolcall

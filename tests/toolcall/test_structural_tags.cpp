// Every format's structural_tag() for every tool_choice mode: valid JSON of xgrammar's structural-tag shape, and the
// text it describes (rendered here from the tag tree with a sample argument object) is read back by the same row's
// parser as the calls it forces. (Compilation and enforcement by xgrammar are tested where the engine links it.)
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "text/tool_calls/reasoning.h"
#include "text/tool_calls/tool_call_format.h"

namespace tinfer::toolcall {
namespace {

using Json = nlohmann::json;
using Mode = ToolChoice::Mode;

const Json kTools = Json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                  "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "get_time"}}
])");

// A sample of the text a format object describes: the first alternative everywhere, {"city": "Paris"} for a
// schema with a "city" property, {} otherwise.
std::string render(const Json& f) {
  std::string type = f.at("type");
  if (type == "const_string") return f.at("value");
  if (type == "sequence") {
    std::string s;
    for (const auto& e : f.at("elements")) s += render(e);
    return s;
  }
  if (type == "tag") return f.at("begin").get<std::string>() + render(f.at("content")) + f.at("end").get<std::string>();
  if (type == "tags_with_separator") {
    std::string s;
    const auto& tags = f.at("tags");
    size_t n = f.at("stop_after_first").get<bool>() ? 1 : tags.size();
    for (size_t i = 0; i < n; ++i) s += (i ? f.at("separator").get<std::string>() : "") + render(tags[i]);
    return s;
  }
  if (type == "triggered_tags") return "Hi. " + render(f.at("tags")[0]);
  if (type == "json_schema") {
    bool city = f.at("json_schema").contains("properties");
    if (f.at("style") == "qwen_xml") return city ? "<parameter=city>\nParis\n</parameter>" : "";
    return city ? R"({"city": "Paris"})" : "{}";
  }
  ADD_FAILURE() << "unexpected format " << type;
  return "";
}

Json tag_json(const ToolCallFormat& f, Mode mode, bool parallel = true, const std::string& name = "") {
  std::string s = f.structural_tag(kTools, ToolChoice{mode, name, parallel});
  if (s.empty()) return Json();
  Json j = Json::parse(s, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << s;
  EXPECT_EQ(j.value("type", ""), "structural_tag");
  EXPECT_TRUE(j.contains("format") && j["format"].contains("type")) << s;
  return j;
}

std::vector<ToolCall> read_back(const ToolCallFormat& f, const std::string& text) {
  auto p = f.make_parser();
  p->push(text);
  p->finish();
  return p->calls();
}

TEST(StructuralTags, NoneIsUnconstrained) {
  for (const auto& f : tool_call_formats()) EXPECT_EQ(f.structural_tag(kTools, {Mode::kNone, "", true}), "") << f.name;
}

TEST(StructuralTags, NamedIsExactlyThatCall) {
  for (const auto& f : tool_call_formats()) {
    Json j = tag_json(f, Mode::kNamed, true, "get_weather");
    ASSERT_FALSE(j.is_null()) << f.name;
    EXPECT_EQ(f.structural_tag(kTools, {Mode::kNamed, "nope", true}), "") << f.name;
    if (std::string_view(f.name) == "pythonic") {
      std::string g = j["format"].at("grammar");
      EXPECT_NE(g.find("root ::= \"[\" call \"]\""), std::string::npos) << g;
      EXPECT_NE(g.find("\"get_weather(\""), std::string::npos) << g;
      EXPECT_EQ(g.find("get_time"), std::string::npos) << g;
      continue;
    }
    std::string text = render(j["format"]);
    auto calls = read_back(f, text);
    ASSERT_EQ(calls.size(), 1u) << f.name << ": " << text;
    EXPECT_EQ(calls[0].name, "get_weather");
    EXPECT_EQ(Json::parse(calls[0].arguments), Json::parse(R"({"city": "Paris"})")) << f.name;
  }
}

TEST(StructuralTags, RequiredIsOneOrMoreCalls) {
  for (const auto& f : tool_call_formats()) {
    for (bool parallel : {true, false}) {
      Json j = tag_json(f, Mode::kRequired, parallel);
      ASSERT_FALSE(j.is_null()) << f.name;
      if (std::string_view(f.name) == "pythonic") {
        std::string g = j["format"].at("grammar");
        EXPECT_EQ(g.find("(sep call)*") != std::string::npos, parallel) << g;
        EXPECT_NE(g.find("\"get_time(\""), std::string::npos) << g;
        continue;
      }
      std::string text = render(j["format"]);
      EXPECT_NE(text.find("get_weather"), std::string::npos) << text;
      auto calls = read_back(f, text);
      ASSERT_EQ(calls.size(), parallel ? 2u : 1u) << f.name << ": " << text;
      EXPECT_EQ(calls[0].name, "get_weather");
      if (parallel) {
        EXPECT_EQ(calls[1].name, "get_time");
        EXPECT_EQ(calls[1].arguments, "{}");
      }
    }
  }
}

TEST(StructuralTags, AutoTriggersOnTheMarker) {
  for (const auto& f : tool_call_formats()) {
    Json j = tag_json(f, Mode::kAuto, true);
    if (std::string_view(f.name) == "pythonic") {
      EXPECT_TRUE(j.is_null());
      continue;
    }
    ASSERT_FALSE(j.is_null()) << f.name;
    EXPECT_EQ(j["format"].at("type"), "triggered_tags");
    EXPECT_FALSE(j["format"].at("at_least_one").get<bool>());
    for (const auto& t : j["format"].at("tags")) {
      std::string begin = t.at("begin");
      bool prefixed = false;
      for (const auto& trig : j["format"].at("triggers")) prefixed |= begin.starts_with(trig.get<std::string>());
      EXPECT_TRUE(prefixed) << begin;
    }
    if (std::string_view(f.name) == "llama3_json") continue;  // Llama calls only at the start of the output
    auto calls = read_back(f, render(j["format"]));
    ASSERT_FALSE(calls.empty()) << f.name;  // (mistral's one trigger opens a whole list)
    EXPECT_EQ(calls[0].name, "get_weather");
  }
}

TEST(StructuralTags, SchemasArePassedThrough) {
  Json j = tag_json(*find_tool_call_format("hermes"), Mode::kNamed, true, "get_weather");
  EXPECT_EQ(j["format"].at("content").at("json_schema"), kTools[0]["function"]["parameters"]);
  EXPECT_EQ(j["format"].at("begin"), "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ");
  EXPECT_EQ(j["format"].at("end"), "}\n</tool_call>");
  Json t = tag_json(*find_tool_call_format("hermes"), Mode::kNamed, true, "get_time");
  EXPECT_EQ(t["format"].at("content").at("json_schema"), Json({{"type", "object"}}));
}

TEST(StructuralTags, FromTextKeepsTheDeclaredPropertyOrder) {
  std::string tools = R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}, "required": ["zeta", "alpha"]}}}])";
  for (const auto& f : tool_call_formats()) {
    std::string ordered = f.structural_tag_text(tools, {Mode::kNamed, "f", true});
    std::string sorted = f.structural_tag(Json::parse(tools), {Mode::kNamed, "f", true});
    ASSERT_FALSE(ordered.empty()) << f.name;
    EXPECT_LT(ordered.find("zeta"), ordered.find("alpha")) << f.name << ": " << ordered;
    EXPECT_GT(sorted.find("zeta"), sorted.find("alpha")) << f.name << ": nlohmann::json sorted them";
    if (std::string_view(f.name) != "pythonic") {
      EXPECT_EQ(Json::parse(ordered), Json::parse(sorted)) << f.name;  // otherwise the same tag
    }
    EXPECT_EQ(f.structural_tag_text("not json", {Mode::kNamed, "f", true}), "");
  }
}

TEST(StructuralTags, ReasoningThenAnswer) {
  Json answer = {{"type", "json_schema"}, {"json_schema", {{"type", "object"}}}};
  for (bool starts_in : {true, false}) {
    Json j = Json::parse(reasoning_then(answer, starts_in));
    EXPECT_EQ(j.at("type"), "structural_tag");
    const Json& els = j.at("format").at("elements");
    ASSERT_EQ(els.size(), 3u);
    const Json& think = starts_in ? els[0] : els[0].at("content");
    EXPECT_EQ(els[0].at("type"), starts_in ? "tag" : "optional");
    EXPECT_EQ(think.at("begin"), starts_in ? "" : "<think>");
    EXPECT_EQ(think.at("end"), "</think>");
    EXPECT_EQ(els[2], answer);
  }
}

TEST(ToolCallFormats, DetectFromTemplates) {
  auto name = [](const std::string& t) { return std::string(detect_tool_call_format(t).name); };
  auto file = [](const char* f) {
    std::ifstream in(std::string(TINFER_SOURCE_DIR) + "/tests/data/chat_templates/templates/" + f);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(name(file("qwen2.5.jinja")), "hermes");
  EXPECT_EQ(name(file("qwen3.jinja")), "hermes");
  EXPECT_EQ(name(file("llama-3.1.jinja")), "llama3_json");
  EXPECT_EQ(name(file("llama-3.2.jinja")), "llama3_json");
  EXPECT_EQ(name(file("mistral-v0.3-tools.jinja")), "mistral");
  EXPECT_EQ(name(file("smollm2.jinja")), "hermes");  // no tool format of its own: the fallback
  EXPECT_EQ(name("<tool_call>\n<function={{ name }}>\n<parameter={{ k }}>\n"), "qwen3_coder");
  EXPECT_EQ(name("respond as [func_name1(params_name1=params_value1, params_name2=params_value2...)]"), "pythonic");
  EXPECT_EQ(name(""), "hermes");
}

}  // namespace
}  // namespace tinfer::toolcall

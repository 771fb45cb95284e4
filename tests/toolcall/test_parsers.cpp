// Every format row's parser: real-shaped outputs (the text each family's template writes for an assistant's call),
// content around calls, calls in code fences, broken calls, and the same text cut at every byte position, in 1- and
// 3-byte chunks and randomly: the reassembled deltas and calls() always equal the one-shot result.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "toolcall/parser_test_util.h"

namespace tinfer::toolcall {
namespace {

using testing::run;
using testing::run_random;
using testing::Streamed;

void expect_same(const Streamed& a, const Streamed& b, const std::string& how) {
  EXPECT_EQ(a.content, b.content) << how;
  EXPECT_EQ(a.problem, "") << how;
  ASSERT_EQ(a.calls.size(), b.calls.size()) << how;
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].index, b.calls[i].index) << how;
    EXPECT_EQ(a.calls[i].id, b.calls[i].id) << how;
    EXPECT_EQ(a.calls[i].name, b.calls[i].name) << how;
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments) << how;
  }
  ASSERT_EQ(a.final_calls.size(), b.final_calls.size()) << how;
  for (size_t i = 0; i < a.final_calls.size(); ++i) {
    EXPECT_EQ(a.final_calls[i].id, b.final_calls[i].id) << how;
    EXPECT_EQ(a.final_calls[i].name, b.final_calls[i].name) << how;
    EXPECT_EQ(a.final_calls[i].arguments, b.final_calls[i].arguments) << how;
    EXPECT_EQ(a.final_calls[i].index, b.final_calls[i].index) << how;
  }
}

// The one-shot result of `format` on `text`, after checking that every chunking gives the same and that each
// complete call's streamed pieces concatenate to its arguments, a JSON object.
Streamed parse(const char* format, const std::string& text, bool none_broke = true) {
  const ToolCallFormat* f = find_tool_call_format(format);
  EXPECT_NE(f, nullptr) << format;
  Streamed one = run(*f, text, {});
  EXPECT_EQ(one.problem, "");
  expect_same(run(*f, text, {1}), one, "1-byte chunks");
  expect_same(run(*f, text, {3}), one, "3-byte chunks");
  expect_same(run(*f, text, {2, 5, 1}), one, "2/5/1-byte chunks");
  for (uint64_t s = 1; s <= 4; ++s) expect_same(run_random(*f, text, s), one, "random chunks " + std::to_string(s));
  for (size_t cut = 1; cut < text.size(); ++cut)
    expect_same(run(*f, text, {cut, text.size()}), one, "split at " + std::to_string(cut));
  for (size_t i = 0; i < one.final_calls.size(); ++i) {
    const ToolCall& c = one.final_calls[i];
    if (none_broke) {
      EXPECT_EQ(c.index, static_cast<int>(i));
    }
    bool found = false;
    for (const auto& d : one.calls)
      if (d.index == c.index) {
        found = true;
        EXPECT_EQ(d.arguments, c.arguments);
        EXPECT_EQ(d.id, c.id);
      }
    EXPECT_TRUE(found);
    auto j = nlohmann::json::parse(c.arguments, nullptr, false);
    EXPECT_TRUE(j.is_object()) << c.arguments;
    EXPECT_EQ(c.id.size(), std::string_view(format) == "mistral" ? 9u : 29u);
  }
  return one;
}

void expect_call(const Streamed& s, size_t i, const std::string& name, const std::string& args_json) {
  ASSERT_LT(i, s.final_calls.size());
  EXPECT_EQ(s.final_calls[i].name, name);
  EXPECT_EQ(nlohmann::json::parse(s.final_calls[i].arguments), nlohmann::json::parse(args_json))
      << s.final_calls[i].arguments;
}

// ---- hermes (Qwen2.5 / Qwen3 templates: "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args +
// "}\n</tool_call>")

TEST(ToolCallHermes, OneCallAsTheTemplateWritesIt) {
  auto s =
      parse("hermes",
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n"
            "</tool_call>");
  EXPECT_EQ(s.content, "");
  ASSERT_EQ(s.final_calls.size(), 1u);
  expect_call(s, 0, "get_weather", R"({"city": "Paris", "unit": "celsius"})");
  EXPECT_EQ(s.final_calls[0].arguments, R"({"city": "Paris", "unit": "celsius"})");  // exactly as written
  EXPECT_TRUE(s.final_calls[0].id.starts_with("call_"));
}

TEST(ToolCallHermes, ContentBeforeAndParallelCalls) {
  auto s = parse("hermes",
                 "Let me check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
                 "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n"
                 "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>");
  EXPECT_EQ(s.content, "Let me check both.");
  ASSERT_EQ(s.final_calls.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.final_calls[i].index, i);
  expect_call(s, 1, "get_time", "{}");
  expect_call(s, 2, "get_weather", R"({"city": "Oslo"})");
  EXPECT_NE(s.final_calls[0].id, s.final_calls[2].id);
}

TEST(ToolCallHermes, TextAfterACallIsContent) {
  auto s = parse("hermes", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\nDone.");
  EXPECT_EQ(s.content, "Done.");
  expect_call(s, 0, "f", R"({"a": 1})");
}

TEST(ToolCallHermes, PlainTextIsUntouched) {
  std::string text = "a < b, <tool and <tool_cal are fine;\n\n trailing spaces  \n";
  auto s = parse("hermes", text);
  EXPECT_EQ(s.content, text);
  EXPECT_TRUE(s.final_calls.empty());
}

TEST(ToolCallHermes, CallInsideACodeFenceIsContent) {
  std::string text =
      "Write it like this:\n```\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n```\nThen <b>.";
  auto s = parse("hermes", text);
  EXPECT_EQ(s.content, text);
  EXPECT_TRUE(s.final_calls.empty());
  // After the fence closes, calls count again.
  auto t = parse("hermes", "```x```\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>");
  EXPECT_EQ(t.content, "```x```");
  EXPECT_EQ(t.final_calls.size(), 1u);
}

TEST(ToolCallHermes, UnbalancedJsonAtFinishIsContent) {
  std::string text = "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, {\"b\": 2}";
  auto s = parse("hermes", text);
  EXPECT_EQ(s.content, text);  // nothing lost: the whitespace before the marker comes back too
  EXPECT_TRUE(s.final_calls.empty());
  ASSERT_EQ(s.calls.size(), 1u);  // its opening deltas had gone out; the index is never completed
}

TEST(ToolCallHermes, InvalidJsonInsideTheTagIsContent) {
  for (std::string text :
       {"<tool_call>\nnot json\n</tool_call> ok", "<tool_call>\n{\"name\": \"f\", \"arguments\": {a: 1}}</tool_call>",
        "<tool_call>\n{\"arguments\": {}}\n</tool_call>", "<tool_call>\n{\"name\": 3}\n</tool_call>",
        "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>", "<tool_call>"}) {
    auto s = parse("hermes", text);
    EXPECT_EQ(s.content, text);
    EXPECT_TRUE(s.final_calls.empty()) << text;
  }
}

TEST(ToolCallHermes, ArgumentsAreValidUtf8) {
  // JSON text is UTF-8: a string with an invalid sequence breaks the call (so its arguments never reach a client
  // as invalid JSON); valid multi-byte text passes.
  for (std::string bad : {"\xff", "\xc3", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc3\x28"}) {
    std::string text = "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"a" + bad + "\"}}</tool_call>";
    auto s = parse("hermes", text);
    EXPECT_TRUE(s.final_calls.empty());
    EXPECT_EQ(s.content, text);
  }
  auto ok =
      parse("hermes",
            "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"caf\u00e9 \u65e5\u672c \U0001F600\"}}</tool_call>");
  ASSERT_EQ(ok.final_calls.size(), 1u);
}

TEST(ToolCallHermes, BrokenCallThenGoodCall) {
  auto s = parse("hermes",
                 "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": tru}}\n</tool_call>\n"
                 "<tool_call>\n{\"name\": \"g\", \"arguments\": {\"b\": true}}\n</tool_call>",
                 /*none_broke=*/false);
  ASSERT_EQ(s.final_calls.size(), 1u);
  EXPECT_EQ(s.final_calls[0].name, "g");
  EXPECT_EQ(s.final_calls[0].index, 1);  // index 0 was opened by the broken call
  EXPECT_TRUE(s.content.starts_with("<tool_call>\n{\"name\": \"f\""));
}

TEST(ToolCallHermes, ArgumentShapes) {
  // Strings with braces, quotes and escapes; numbers in every position; nesting.
  auto s = parse("hermes",
                 "<tool_call>\n{\"name\": \"q\", \"arguments\": {\"s\": \"he said \\\"}\\\" {\\u00e9\", \"n\": -1.5e3, "
                 "\"xs\": [0, 1, [2, {\"k\": null}]], \"t\": true}}\n</tool_call>");
  expect_call(s, 0, "q", R"({"s": "he said \"}\" {é", "n": -1500, "xs": [0, 1, [2, {"k": null}]], "t": true})");
  // "parameters" is read as "arguments"; arguments as a JSON string holding an object; no arguments at all; the
  // name after the arguments; extra members; a missing closing tag.
  expect_call(parse("hermes", "<tool_call>{\"name\": \"f\", \"parameters\": {\"a\": 1}}</tool_call>"), 0, "f",
              R"({"a": 1})");
  auto str = parse("hermes", "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>");
  expect_call(str, 0, "f", R"({"a": 1})");
  expect_call(parse("hermes", "<tool_call>{\"name\": \"f\"}</tool_call>"), 0, "f", "{}");
  expect_call(parse("hermes", "<tool_call>{\"arguments\": {\"a\": 2}, \"name\": \"f\"}</tool_call>"), 0, "f",
              R"({"a": 2})");
  expect_call(parse("hermes", "<tool_call>{\"id\": 1, \"name\": \"f\", \"arguments\": {}, \"x\": [1]}</tool_call>"), 0,
              "f", "{}");
  auto open = parse("hermes", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"n\": 5}}");
  expect_call(open, 0, "f", R"({"n": 5})");
  EXPECT_EQ(open.content, "");
}

TEST(ToolCallHermes, NumberEndsTheArguments) {
  auto s = parse("hermes", "<tool_call>{\"name\":\"f\",\"arguments\":{\"n\":10}}</tool_call>");
  EXPECT_EQ(s.final_calls.at(0).arguments, R"({"n":10})");
}

// ---- llama3_json (Llama 3.1 / 3.2 templates: {"name": "…", "parameters": {...}})

TEST(ToolCallLlama3Json, OneCall) {
  auto s = parse("llama3_json", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}");
  EXPECT_EQ(s.content, "");
  expect_call(s, 0, "get_weather", R"({"city": "Paris"})");
  EXPECT_EQ(s.final_calls[0].arguments, R"({"city": "Paris"})");
}

TEST(ToolCallLlama3Json, PythonTagAndSemicolons) {
  auto s = parse("llama3_json",
                 "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", \"parameters\": {}}\n"
                 "{\"name\": \"c\", \"arguments\": {\"y\": [1]}}");
  ASSERT_EQ(s.final_calls.size(), 3u);
  expect_call(s, 0, "a", R"({"x": 1})");
  expect_call(s, 1, "b", "{}");
  expect_call(s, 2, "c", R"({"y": [1]})");
  EXPECT_EQ(s.content, "");
}

TEST(ToolCallLlama3Json, TypeMemberIsIgnored) {
  auto s = parse("llama3_json", "{\"type\": \"function\", \"name\": \"f\", \"parameters\": {\"a\": \"b\"}}");
  expect_call(s, 0, "f", R"({"a": "b"})");
}

TEST(ToolCallLlama3Json, AnswersThatAreNotCalls) {
  for (std::string text : {"The weather is nice.", "{\"city\": \"Paris\"}", "  {\"name\": \"Bob\", \"age\": 3}",
                           "Here: {\"name\": \"f\", \"parameters\": {}}", "<|python_tag|>print(1)", "{\"name\": "}) {
    auto s = parse("llama3_json", text);
    EXPECT_EQ(s.content, text);
    EXPECT_TRUE(s.final_calls.empty()) << text;
  }
}

TEST(ToolCallLlama3Json, TextAfterTheCall) {
  auto s = parse("llama3_json", "{\"name\": \"f\", \"parameters\": {\"n\": 2}} and that is all");
  expect_call(s, 0, "f", R"({"n": 2})");
  EXPECT_EQ(s.content, "and that is all");
}

// ---- mistral

TEST(ToolCallMistral, ListForm) {
  auto s = parse("mistral",
                 "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": "
                 "\"get_time\", \"arguments\": {}}]");
  EXPECT_EQ(s.content, "");
  ASSERT_EQ(s.final_calls.size(), 2u);
  expect_call(s, 0, "get_weather", R"({"city": "Paris"})");
  expect_call(s, 1, "get_time", "{}");
  for (char c : s.final_calls[0].id) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)));
}

TEST(ToolCallMistral, NameArgsForm) {
  auto s = parse("mistral",
                 "Checking.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[CALL_ID]a1B2c3D4e"
                 "[ARGS]{}");
  EXPECT_EQ(s.content, "Checking.");
  ASSERT_EQ(s.final_calls.size(), 2u);
  expect_call(s, 0, "get_weather", R"({"city": "Paris"})");
  expect_call(s, 1, "get_time", "{}");
}

TEST(ToolCallMistral, BrokenIsContent) {
  for (std::string text : {"[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {", "[TOOL_CALLS] hello there",
                           "[TOOL_CALLS]f[ARG]{}", "```\n[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}]\n```"}) {
    auto s = parse("mistral", text);
    EXPECT_EQ(s.content, text);
    EXPECT_TRUE(s.final_calls.empty()) << text;
  }
  // A list that breaks after a complete call keeps that call; the rest is content.
  auto s = parse("mistral", "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}, oops");
  ASSERT_EQ(s.final_calls.size(), 1u);
  EXPECT_EQ(s.content, ", oops");
}

// ---- pythonic

TEST(ToolCallPythonic, ListOfCalls) {
  auto s = parse("pythonic",
                 "[get_weather(city='Paris', days=3), get_time(tz=\"UTC\", exact=True, extra=None, xs=[1, 2.5, -3], "
                 "d={'a': 'b\\'c', 'n': (1, 2)}, u='caf\\u00e9')]");
  EXPECT_EQ(s.content, "");
  ASSERT_EQ(s.final_calls.size(), 2u);
  expect_call(s, 0, "get_weather", R"({"city": "Paris", "days": 3})");
  EXPECT_EQ(s.final_calls[0].arguments, R"({"city":"Paris","days":3})");  // converted, keys in written order
  expect_call(
      s, 1, "get_time",
      R"({"tz": "UTC", "exact": true, "extra": null, "xs": [1, 2.5, -3], "d": {"a": "b'c", "n": [1, 2]}, "u": "café"})");
}

TEST(ToolCallPythonic, TagsAndNoArguments) {
  auto s = parse("pythonic", "<|python_start|>[ping(), mod.fn(x=1)]<|python_end|>\nanything else");
  ASSERT_EQ(s.final_calls.size(), 2u);
  expect_call(s, 0, "ping", "{}");
  expect_call(s, 1, "mod.fn", R"({"x": 1})");
  EXPECT_EQ(s.content, "anything else");
}

TEST(ToolCallPythonic, NotCalls) {
  for (std::string text : {"Sure!", "[1, 2, 3] are numbers", "[see below]", "[f(a=1), g(", "[f(1, 2)]",
                           "[f(a=undefined_name)]", "[]", "  [f(a=')')"}) {
    auto s = parse("pythonic", text);
    EXPECT_EQ(s.content, text);
    EXPECT_TRUE(s.final_calls.empty()) << text;
  }
}

// ---- qwen3_coder

TEST(ToolCallQwen3Coder, AsTheTemplateWritesIt) {
  auto s =
      parse("qwen3_coder",
            "I'll look.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco\n</parameter>\n"
            "<parameter=days>\n3\n</parameter>\n<parameter=opts>\n{\"units\": [\"c\"]}\n</parameter>\n</function>\n"
            "</tool_call>\n<tool_call>\n<function=ping>\n</function>\n</tool_call>");
  EXPECT_EQ(s.content, "I'll look.");
  ASSERT_EQ(s.final_calls.size(), 2u);
  EXPECT_EQ(s.final_calls[0].arguments, R"({"city": "San Francisco", "days": 3, "opts": {"units":["c"]}})");
  expect_call(s, 1, "ping", "{}");
}

TEST(ToolCallQwen3Coder, MultiLineValuesAndBareFunction) {
  auto s = parse("qwen3_coder", "<function=write>\n<parameter=text>\nline 1\nline 2\n</parameter>\n</function>");
  expect_call(s, 0, "write", R"({"text": "line 1\nline 2"})");
}

TEST(ToolCallQwen3Coder, DeclaredStringsStayStrings) {
  std::string text =
      "<tool_call>\n<function=lookup>\n<parameter=zip>\n12345\n</parameter>\n<parameter=n>\n12345\n"
      "</parameter>\n</function>\n</tool_call>";
  auto p = find_tool_call_format("qwen3_coder")->make_parser();
  p->set_tools(nlohmann::json::parse(R"([{"type": "function", "function": {"name": "lookup", "parameters":
      {"type": "object", "properties": {"zip": {"type": "string"}, "n": {"type": "integer"}}}}}])"));
  p->push(text);
  p->finish();
  ASSERT_EQ(p->calls().size(), 1u);
  EXPECT_EQ(p->calls()[0].arguments, R"({"zip": "12345", "n": 12345})");
  // Without the tools, what parses as JSON is JSON.
  expect_call(parse("qwen3_coder", text), 0, "lookup", R"({"zip": 12345, "n": 12345})");
}

TEST(ToolCallQwen3Coder, BrokenIsContent) {
  for (std::string text : {"<tool_call>\n<function=f>\n<parameter=a>\n1\n", "<tool_call>\nhello</tool_call>",
                           "<tool_call>\n<function=f>\noops\n</function>", "<function=>"}) {
    auto s = parse("qwen3_coder", text);
    EXPECT_EQ(s.content, text);
    EXPECT_TRUE(s.final_calls.empty()) << text;
  }
}

// ---- the table

TEST(ToolCallFormats, TableAndLookup) {
  std::vector<std::string> names;
  for (const auto& f : tool_call_formats()) names.push_back(f.name);
  EXPECT_EQ(names.size(), 5u);
  for (const char* n : {"hermes", "llama3_json", "mistral", "pythonic", "qwen3_coder"})
    EXPECT_NE(find_tool_call_format(n), nullptr) << n;
  EXPECT_EQ(find_tool_call_format("nope"), nullptr);
}

}  // namespace
}  // namespace tinfer::toolcall

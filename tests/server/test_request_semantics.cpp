// Issue 9's request/response semantics without a model: refused fields, content-part type errors,
// logit_bias, 64-bit seeds, prompt lists and echo (parsing), byte-form logprob tokens, and the
// whole response written piece by piece. The HTTP path of the same features is in test_server_units.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/fake_engine.h"  // tests/server
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/sample_output.h"

using nlohmann::json;
using namespace tinfer;
using namespace tinfer::server;

namespace {
// The ApiError a body raises ("<accepted>" when it parses).
ApiError error_of(const char* text, bool chat = false) {
  try {
    parse_completion_request(json::parse(text), chat);
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "", "<accepted>");
}
}  // namespace

// vLLM's stop_token_ids is served: a list of ids handed to the engine (which checks them against the
// vocabulary); anything but a short list of non-negative integers is refused naming the field.
TEST(Request, StopTokenIdsParsed) {
  CompletionRequest r = parse_completion_request(nlohmann::json::parse(R"({"prompt": "x", "stop_token_ids": [5, 7]})"), false);
  EXPECT_EQ(r.stop_token_ids, (std::vector<int32_t>{5, 7}));
  EXPECT_TRUE(parse_completion_request(nlohmann::json::parse(R"({"prompt": "x", "stop_token_ids": []})"), false)
                  .stop_token_ids.empty());
  EXPECT_EQ(error_of(R"({"prompt": "x", "stop_token_ids": [-1]})").param, "stop_token_ids[0]");
  EXPECT_EQ(error_of(R"({"prompt": "x", "stop_token_ids": 5})").param, "stop_token_ids");
  std::string many = R"({"prompt": "x", "stop_token_ids": [)";
  for (int i = 0; i < kMaxStopTokenIds + 1; ++i) many += (i ? "," : "") + std::to_string(i);
  EXPECT_EQ(error_of((many + "]}").c_str()).param, "stop_token_ids");
}

// Beam search (vLLM's fields): parsed on both endpoints; an absent temperature is 0 for it, a positive one and
// streaming are refused by name; without use_beam_search the other two fields change nothing.
TEST(Request, BeamSearchFields) {
  CompletionRequest r = parse_completion_request(
      json::parse(R"({"prompt": "x", "n": 3, "use_beam_search": true, "length_penalty": 0.5, "early_stopping": true})"),
      false);
  EXPECT_TRUE(r.use_beam_search);
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.length_penalty, 0.5f);
  EXPECT_TRUE(r.early_stopping);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  r = parse_completion_request(
      json::parse(R"({"messages": [{"role": "user", "content": "x"}], "use_beam_search": true, "temperature": 0})"),
      true);
  EXPECT_TRUE(r.use_beam_search);
  EXPECT_FALSE(r.early_stopping);
  EXPECT_EQ(r.length_penalty, 1.0f);
  EXPECT_EQ(error_of(R"({"prompt": "x", "use_beam_search": true, "temperature": 0.5})").param, "temperature");
  EXPECT_EQ(error_of(R"({"prompt": "x", "use_beam_search": true, "stream": true})").param, "stream");
  EXPECT_EQ(error_of(R"({"prompt": "x", "use_beam_search": 1})").param, "use_beam_search");
  EXPECT_EQ(error_of(R"({"prompt": "x", "length_penalty": "long"})").param, "length_penalty");
  r = parse_completion_request(json::parse(R"({"prompt": "x", "length_penalty": 2})"), false);
  EXPECT_FALSE(r.use_beam_search);
  EXPECT_EQ(r.sampling.temperature, 1.0f);  // the OpenAI default stays for sampling
}

// Fields for features the server lacks are refused by name (they were once accepted and ignored, so a client
// believed it got them), and so are tool and format fields that ask for what cannot be given; values asking for
// nothing pass, and so do the tool and structured-output fields the server now serves.
TEST(Request, RefusesUnsupportedFeaturesByName) {
  const char* chat_refused[] = {
      R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})",
      R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "foo"}})",
      R"({"messages": [{"role": "user", "content": "x"}], "functions": [{"name": "f g"}]})",
      R"({"messages": [{"role": "user", "content": "x"}], "function_call": "auto"})",
      R"({"messages": [{"role": "user", "content": "x"}], "parallel_tool_calls": 1})",
      R"({"messages": [{"role": "user", "content": "x"}], "guided_json": 7})",
      R"({"messages": [{"role": "user", "content": "x"}], "echo": true})",
  };
  const char* chat_names[] = {"tool_choice", "response_format.type", "functions[0].name", "function_call",
                              "parallel_tool_calls", "guided_json", "echo"};
  for (size_t i = 0; i < std::size(chat_refused); ++i) {
    ApiError e = error_of(chat_refused[i], true);
    EXPECT_EQ(e.status, 400) << chat_refused[i];
    EXPECT_EQ(e.param, chat_names[i]);
    EXPECT_NE(std::string(e.what()).find(chat_names[i]), std::string::npos) << e.what();
  }
  EXPECT_EQ(error_of(R"({"prompt": "x", "suffix": "tail"})").param, "suffix");
  EXPECT_EQ(error_of(R"({"prompt": "x", "best_of": 3})").param, "best_of");
  EXPECT_EQ(error_of(R"({"prompt": "x", "best_of": 2, "n": 3})").param, "best_of");
  // Issue 26: best_of reads as every integer field does (2.0 is 2; 1.5 is "must be an integer").
  EXPECT_EQ(error_of(R"({"prompt": "x", "best_of": 2.0, "n": 2})").param, "<accepted>");
  EXPECT_EQ(error_of(R"({"prompt": "x", "best_of": 2.0, "n": 2.0})").param, "<accepted>");
  EXPECT_NE(std::string(error_of(R"({"prompt": "x", "best_of": 1.5})").what()).find("must be an integer"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"prompt": "x", "best_of": 3.0, "n": 2})").code, "unsupported_parameter");
  // Issue 26: stream_options without a stream is a 400 naming it (OpenAI, vLLM); {} and null ask for nothing.
  for (const char* b : {R"({"prompt": "x", "stream_options": {"include_usage": true}})",
                        R"({"prompt": "x", "stream": false, "stream_options": {"include_usage": false}})"}) {
    EXPECT_EQ(error_of(b).param, "stream_options") << b;
    EXPECT_EQ(error_of(b, true).param, "messages") << b;  // chat checks its messages first
  }
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}})",
                     true).param, "stream_options");
  EXPECT_EQ(error_of(R"({"prompt": "x", "stream_options": {}})").param, "<accepted>");
  EXPECT_EQ(error_of(R"({"prompt": "x", "stream_options": null})").param, "<accepted>");
  EXPECT_EQ(error_of(R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": true}})").param,
            "<accepted>");
  EXPECT_EQ(error_of(R"({"prompt": "x", "response_format": {"type": "json_schema"}})").param,
            "response_format.json_schema");
  EXPECT_EQ(error_of(R"({"prompt": "x", "prompt_logprobs": 1})").param, "prompt_logprobs");
  EXPECT_EQ(error_of(R"({"prompt": "x", "stream": true, "stream_options": {"continuous_usage_stats": true}})").param,
            "stream_options.continuous_usage_stats");
  // Harmless values.
  for (const char* ok : {R"({"messages": [{"role": "user", "content": "x"}], "tools": [], "tool_choice": "none",
                             "response_format": {"type": "text"}, "functions": null})",
                         R"({"messages": [{"role": "user", "content": "x"}], "tools": null})",
                         R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"},
                             "parallel_tool_calls": true})",
                         R"({"messages": [{"role": "user", "content": "x"}], "functions": [{"name": "f"}],
                             "function_call": {"name": "f"}})",
                         R"({"messages": [{"role": "user", "content": "x"}], "guided_json": {}})"})
    EXPECT_EQ(error_of(ok, true).param, "<accepted>") << ok;
  EXPECT_EQ(error_of(R"({"prompt": "x", "best_of": 2, "n": 2, "suffix": ""})").param, "<accepted>");
  EXPECT_EQ(error_of(R"({"prompt": "x", "best_of": 1, "echo": false})").param, "<accepted>");
}

// A content part's wrong type is the client's invalid request, named, not "invalid JSON".
TEST(Request, ContentPartTypeErrorsNameTheField) {
  ApiError e = error_of(R"({"messages": [{"role": "user", "content": [{"type": 5, "text": "x"}]}]})", true);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "messages[0].content[0].type");
  EXPECT_EQ(e.type, "invalid_request_error");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", true).param,
            "messages[0].content[0].type");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": [{"text": "x"}]}]})", true).param,
            "messages[0].content[0].type");
  EXPECT_EQ(error_of(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]})", true).param,
            "messages[0].content[0].text");
}

TEST(Request, LogitBias) {
  CompletionRequest r = parse_completion_request(json::parse(R"({"prompt": "x", "logit_bias": {"7": -100, "12": 2.5}})"), false);
  auto b = r.sampling.logit_bias;
  std::sort(b.begin(), b.end());
  EXPECT_EQ(b, (std::vector<std::pair<int32_t, float>>{{7, -100.0f}, {12, 2.5f}}));
  EXPECT_EQ(error_of(R"({"prompt": "x", "logit_bias": {"7": 101}})").param, "logit_bias");
  EXPECT_EQ(error_of(R"({"prompt": "x", "logit_bias": {"a": 1}})").param, "logit_bias");
  EXPECT_EQ(error_of(R"({"prompt": "x", "logit_bias": {"07": 1}})").param, "logit_bias");
  EXPECT_EQ(error_of(R"({"prompt": "x", "logit_bias": {"-1": 1}})").param, "logit_bias");
  EXPECT_EQ(error_of(R"({"prompt": "x", "logit_bias": [1]})").param, "logit_bias");
  EXPECT_EQ(error_of(R"({"prompt": "x", "logit_bias": {"1": "big"}})").param, "logit_bias");
}

// Seeds: every integer in [-2^63, 2^64) is its own deterministic seed; negatives are two's complement
// (as torch.Generator.manual_seed, and so vLLM, takes them); nothing beyond is silently "random".
TEST(Request, SeedsCoverTheWhole64BitRange) {
  auto seed_of = [](const char* v) {
    return parse_completion_request(json::parse(std::string(R"({"prompt": "x", "seed": )") + v + "}"), false).sampling.seed;
  };
  EXPECT_EQ(seed_of("18446744073709551615"), ~uint64_t{0});
  EXPECT_EQ(seed_of("9223372036854775808"), uint64_t{1} << 63);
  EXPECT_EQ(seed_of("-1"), ~uint64_t{0});
  EXPECT_EQ(seed_of("-9223372036854775808"), uint64_t{1} << 63);
  EXPECT_EQ(seed_of("7.0"), uint64_t{7});
  EXPECT_FALSE(parse_completion_request(json::parse(R"({"prompt": "x", "seed": null})"), false).sampling.seed);
  EXPECT_EQ(error_of(R"({"prompt": "x", "seed": 18446744073709551616})").param, "seed");
  EXPECT_EQ(error_of(R"({"prompt": "x", "seed": -9223372036854775809})").param, "seed");
  EXPECT_EQ(error_of(R"({"prompt": "x", "seed": 1.5})").param, "seed");
  EXPECT_EQ(error_of(R"({"prompt": "x", "seed": "1"})").param, "seed");
}

// OpenAI's four prompt forms; a list is several prompts, bounded with n by kMaxN.
TEST(Request, PromptListsAndEcho) {
  auto prompts_of = [](const char* body) { return parse_completion_request(json::parse(body), false).prompts; };
  auto two = prompts_of(R"({"prompt": ["a", "b"]})");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].text, "b");
  auto ids = prompts_of(R"({"prompt": [[1, 2], [3]]})");
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_TRUE(ids[1].is_ids);
  EXPECT_EQ(ids[1].ids, std::vector<int32_t>{3});
  EXPECT_EQ(prompts_of(R"({"prompt": [1, 2]})").size(), 1u);
  EXPECT_EQ(error_of(R"({"prompt": ["a", 1]})").param, "prompt[1]");
  EXPECT_EQ(error_of(R"({"prompt": [[1], []]})").param, "prompt[1]");
  EXPECT_EQ(error_of(R"({"prompt": [[1], [-1]]})").param, "prompt[1][0]");
  EXPECT_EQ(error_of(R"({"prompt": ["a", "b", "c"], "n": 6})").param, "prompt");
  EXPECT_EQ(error_of(R"({"prompt": ["a", "b"], "n": 8})").param, "<accepted>");
  EXPECT_TRUE(parse_completion_request(json::parse(R"({"prompt": "a", "echo": true})"), false).echo);
  EXPECT_EQ(error_of(R"({"prompt": "a", "echo": true, "logprobs": 1})").param, "echo");
  EXPECT_EQ(error_of(R"({"prompt": "a", "echo": 1})").param, "echo");
}

// Tokens that are part of a UTF-8 character are shown in OpenAI's byte form, so distinct partial
// tokens stay distinct top_logprobs keys (they all used to dump as "\ufffd", hiding entries).
TEST(Response, PartialUtf8TokensKeepDistinctKeys) {
  std::vector<TokenRecord> recs = {{"\xE2\x80", -0.1f, {{"\xE2\x80", -0.1f}, {"\xE2\x81", -2.0f}, {"\xC3", -3.0f}, {"a", -4.0f}}, 0}};
  json comp = json::parse(dump(logprobs_json(false, recs)));
  EXPECT_EQ(comp["tokens"][0], "bytes:\\xe2\\x80");
  EXPECT_EQ(comp["top_logprobs"][0].size(), 4u);
  EXPECT_EQ(comp["top_logprobs"][0]["bytes:\\xc3"], -3.0f);
  json chat = json::parse(dump(logprobs_json(true, recs)));
  EXPECT_EQ(chat["content"][0]["token"], "bytes:\\xe2\\x80");
  EXPECT_EQ(chat["content"][0]["bytes"], json::array({0xE2, 0x80}));  // the raw bytes, per OpenAI
  EXPECT_EQ(chat["content"][0]["top_logprobs"][1]["bytes"], json::array({0xE2, 0x81}));
  EXPECT_EQ(token_display("\xC3\xA9"), "\xC3\xA9");  // whole characters are themselves
}

// The incrementally written body is the JSON the tree builder produced: same choices, logprobs, echo.
TEST(Response, FullBodyWrittenPieceByPiece) {
  test::ByteTokenizer tok;
  std::vector<SampleOutput> samples;
  for (int i = 0; i < 2; ++i) samples.emplace_back(tok, std::vector<std::string>{}, true, false);
  for (int k = 0; k < 3; ++k) {
    TokenEvent e;
    e.has_token = true;
    e.token = 3 + 'x' + k;
    e.logprob = -0.5f;
    e.top_logprobs = {{e.token, -0.5f}, {3 + 'q', -1.5f}};
    e.finished = k == 2;
    e.finish_reason = e.finished ? FinishReason::kLength : FinishReason::kNone;
    for (auto& s : samples) s.on_event(e);
  }
  ResponseMeta m{"cmpl-1", 7, "fake", false, true};
  Usage u{3, 6, 0};
  json r = json::parse(full_response_body(m, samples, {"P0", "P1"}, u, {"w"}));
  EXPECT_EQ(r["object"], "text_completion");
  ASSERT_EQ(r["choices"].size(), 2u);
  EXPECT_EQ(r["choices"][1]["index"], 1);
  EXPECT_EQ(r["choices"][1]["text"], "P1xyz");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["choices"][0]["logprobs"], logprobs_json(false, samples[0].records()));
  EXPECT_EQ(r["usage"], usage_json(u));
  EXPECT_EQ(r["warnings"], json::array({"w"}));
  m.chat = true;
  json c = json::parse(full_response_body(m, samples, {}, u, {}));
  EXPECT_EQ(c["choices"][0]["message"]["content"], "xyz");
  EXPECT_EQ(c["choices"][0]["logprobs"], logprobs_json(true, samples[0].records()));
  m.logprobs = false;
  EXPECT_TRUE(json::parse(full_response_body(m, samples, {}, u, {}))["choices"][0]["logprobs"].is_null());
}

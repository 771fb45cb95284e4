// Server pieces without a model: stop strings, request parsing and errors, per-sample detokenizing,
// response shapes, the engine driver, and an in-process HTTP round trip.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/api_error.h"
#include "server/engine_driver.h"
#include "server/fake_engine.h"  // tests/server
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/sample_output.h"
#include "server/stop_matcher.h"

using nlohmann::json;
using namespace tinfer;
using namespace tinfer::server;

TEST(StopMatcher, HoldsPrefixesAndCutsAcrossPushes) {
  StopMatcher m({"STOP", "xy"});
  EXPECT_EQ(m.push("hello S"), "hello ");  // "S" may start "STOP"
  EXPECT_EQ(m.push("T"), "");
  EXPECT_EQ(m.push("OP and more"), "");
  EXPECT_TRUE(m.matched());
  EXPECT_EQ(m.push("ignored"), "");
}

TEST(StopMatcher, EarliestMatchWinsAndFlushReleasesPartial) {
  StopMatcher a({"cd", "b"});
  EXPECT_EQ(a.push("abcd"), "a");
  StopMatcher b({"STOP"});
  EXPECT_EQ(b.push("abc ST"), "abc ");
  EXPECT_EQ(b.flush(), "ST");
  EXPECT_FALSE(b.matched());
  StopMatcher none({});
  EXPECT_EQ(none.push("text"), "text");
}

TEST(Request, ParsesFieldsAndIgnoresUnknown) {
  json body = json::parse(R"({"model": "m", "prompt": "hi", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9,
    "top_k": -1, "min_p": 0.1, "presence_penalty": 1, "frequency_penalty": -1, "repetition_penalty": 1.1,
    "seed": 5, "stop": "\n", "n": 2, "stream": true, "stream_options": {"include_usage": true}, "logprobs": 3,
    "user": "u", "some_future_field": {"x": 1}})");
  CompletionRequest r = parse_completion_request(body, false);
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "hi");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_EQ(r.sampling.seed, uint64_t{5});
  EXPECT_EQ(r.stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(r.n, 2);
  EXPECT_TRUE(r.stream && r.include_usage);
  EXPECT_TRUE(r.sampling.logprobs);
  EXPECT_EQ(r.sampling.top_logprobs, 3);
  json chat = json::parse(R"({"messages": [{"role": "developer", "content": [{"type": "text", "text": "a"},
    {"type": "text", "text": "b"}]}, {"role": "user", "content": "q"}], "max_completion_tokens": 3,
    "logprobs": true, "top_logprobs": 2})");
  CompletionRequest c = parse_completion_request(chat, true);
  ASSERT_EQ(c.messages.size(), 2u);
  EXPECT_EQ(c.messages[0].role, "system");
  EXPECT_EQ(c.messages[0].content, "ab");
  EXPECT_EQ(c.max_tokens, 3);
  EXPECT_TRUE(c.chat_logprobs);
  EXPECT_EQ(c.sampling.top_logprobs, 2);
  EXPECT_EQ(parse_completion_request(json::parse(R"({"prompt": [1, 2, 3]})"), false).prompts[0].ids.size(), 3u);
}

TEST(Request, ErrorsNameTheField) {
  auto param_of = [](const char* text, bool chat = false) -> std::string {
    try {
      parse_completion_request(json::parse(text), chat);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400);
      return e.param;
    }
    return "<accepted>";
  };
  EXPECT_EQ(param_of(R"({})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt": "x", "max_tokens": "3"})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"prompt": "x", "max_tokens": 0})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"prompt": "x", "max_tokens": 1e30})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"prompt": "x", "max_tokens": 18446744073709551615})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"prompt": "x", "temperature": 2.5})"), "temperature");
  EXPECT_EQ(param_of(R"({"prompt": "x", "top_p": 0})"), "top_p");
  EXPECT_EQ(param_of(R"({"prompt": "x", "n": 0})"), "n");
  EXPECT_EQ(param_of(R"({"prompt": "x", "stream": "yes"})"), "stream");
  EXPECT_EQ(param_of(R"({"prompt": "x", "stop": ["a", ""]})"), "stop");
  EXPECT_EQ(param_of(R"({"prompt": [1, -2]})"), "prompt[1]");
  EXPECT_EQ(param_of(R"({"messages": [{"content": "x"}]})", true), "messages[0].role");
  EXPECT_EQ(param_of(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", true), "top_logprobs");
  EXPECT_EQ(param_of(R"({"prompt": "x", "max_tokens": 16.0})"), "<accepted>");
}

TEST(SampleOutput, Utf8AcrossTokensAndStopAcrossTokens) {
  test::ByteTokenizer tok;
  SampleOutput s(tok, {"lo w"}, true, false);
  auto ev = [](int byte, bool fin = false) {
    TokenEvent e;
    e.has_token = true;
    e.token = 3 + byte;
    e.finished = fin;
    e.finish_reason = fin ? FinishReason::kLength : FinishReason::kNone;
    return e;
  };
  EXPECT_EQ(s.on_event(ev(0xC3)), "");  // first byte of "é"
  EXPECT_EQ(s.on_event(ev(0xA9)), "\xC3\xA9");
  std::string out;
  for (char c : std::string("hel")) out += s.on_event(ev(c));
  EXPECT_EQ(out, "he");                 // the "l" could start "lo w"
  EXPECT_EQ(s.on_event(ev('l')), "l");  // "ll": only the last "l" can still start it
  EXPECT_EQ(s.on_event(ev('o')), "");
  EXPECT_EQ(s.on_event(ev(' ')), "");
  EXPECT_EQ(s.on_event(ev('w')), "");
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.finish_reason(), "stop");
  EXPECT_EQ(s.text(), "\xC3\xA9hel");
  EXPECT_EQ(s.records().size(), 9u);
  EXPECT_EQ(s.records()[2].text_offset, 2u);
}

TEST(Response, ShapesOfBothLogprobFormats) {
  std::vector<TokenRecord> recs = {{"a", -0.5f, {{"a", -0.5f}, {"b", -1.5f}}, 0}};
  json chat = logprobs_json(true, recs);
  EXPECT_EQ(chat["content"][0]["token"], "a");
  EXPECT_EQ(chat["content"][0]["bytes"], json::array({97}));
  EXPECT_EQ(chat["content"][0]["top_logprobs"].size(), 2u);
  json comp = logprobs_json(false, recs);
  EXPECT_EQ(comp["tokens"], json::array({"a"}));
  EXPECT_EQ(comp["top_logprobs"][0]["b"], -1.5f);
  EXPECT_EQ(comp["text_offset"][0], 0);
  ApiError e(404, "no route", "", "not_found");
  json err = json::parse(error_body(e));
  EXPECT_EQ(err["error"]["code"], "not_found");
  EXPECT_TRUE(err["error"]["param"].is_null());
  EXPECT_EQ(dump(json("\xff")), "\"\xEF\xBF\xBD\"");  // invalid UTF-8 never throws
}

TEST(Metrics, RendersPrometheusText) {
  Metrics m;
  m.ttft.observe(0.03);
  EngineStats s;
  s.kv_blocks_used = 3;
  s.kv_blocks_total = 10;
  s.kv_blocks_touched = 7;
  s.kv_bytes_per_token = 11880;
  s.kv_types = "mixed: 28 int8/int8, 2 f16/f16";
  std::string t = m.render(s, 2, true);
  EXPECT_NE(t.find("tinfer:kv_blocks_used 3\n"), std::string::npos);
  EXPECT_NE(t.find("tinfer:kv_blocks_touched 7\n"), std::string::npos);
  EXPECT_NE(t.find("tinfer:kv_bytes_per_token 11880\n"), std::string::npos);
  EXPECT_NE(t.find("tinfer:kv_cache_info{types=\"mixed: 28 int8/int8, 2 f16/f16\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("tinfer:time_to_first_token_seconds_bucket{le=\"0.04\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("tinfer:num_requests_queued_server 2\n"), std::string::npos);
}

TEST(Auth, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("Bearer k", "Bearer k"));
  EXPECT_FALSE(constant_time_equal("Bearer k", "Bearer K"));
  EXPECT_FALSE(constant_time_equal("Bearer k", "Bearer kk"));
  EXPECT_FALSE(constant_time_equal("", "x"));
}

// Issue 26: the scheme in any case and 1*SP before the key (RFC 9110 §11); exactly one Authorization header.
TEST(Auth, SchemeCaseSpacesAndDuplicates) {
  auto with = [](std::vector<std::string> values) {
    HttpRequest r;
    for (auto& v : values) r.headers.emplace_back("authorization", std::move(v));
    return r;
  };
  for (const char* ok : {"Bearer k1", "bearer k1", "BEARER k1", "bEaReR k1", "Bearer   k1"})
    EXPECT_EQ(api_key_refusal(with({ok}), "k1"), nullptr) << ok;
  for (const char* bad : {"Bearer k2", "Bearer k1x", "Bearer", "Bearer ", "Bearerk1", "Basic k1", "k1", ""})
    EXPECT_NE(api_key_refusal(with({bad}), "k1"), nullptr) << bad;
  EXPECT_NE(api_key_refusal(with({}), "k1"), nullptr);
  for (auto pair : {std::vector<std::string>{"Bearer k1", "Bearer k1"}, {"Bearer k1", "Bearer no"},
                    {"Bearer no", "Bearer k1"}})
    EXPECT_STREQ(api_key_refusal(with(pair), "k1"), "more than one Authorization header");
}

TEST(Routes, PercentDecode) {
  EXPECT_EQ(percent_decode("org%2Fmodel"), "org/model");
  EXPECT_EQ(percent_decode("a%2fb%20c"), "a/b c");
  EXPECT_EQ(percent_decode("100%"), "100%");
  EXPECT_EQ(percent_decode("%zz%4"), "%zz%4");
  EXPECT_EQ(percent_decode("plain"), "plain");
}

// The driver steps the engine on its own thread: a submitted request runs to the end, and a cancelled
// one ends with "abort". (Long jobs are the scheduler's background class: tests/engine/test_scheduler.cpp.)
TEST(EngineDriver, StepsSubmittedRequestsAndCancels) {
  test::FakeEngine engine(/*max_seqs=*/2);
  EngineDriver driver(engine);
  engine.set_step_delay(std::chrono::microseconds(300));
  std::atomic<int> tokens{0};
  std::atomic<bool> done{false}, aborted{false};
  GenerationRequest r;
  r.prompt = {1};
  r.max_tokens = 5;
  driver.submit(engine.resolve(r), [&](const TokenEvent& e) {
    tokens += e.has_token;
    if (e.finished) done = true;
  });
  r.max_tokens = 100000;  // clamped to the context; cancelled long before
  const RequestId id = driver.submit(engine.resolve(r), [&](const TokenEvent& e) {
    if (e.finished) aborted = e.finish_reason == FinishReason::kAbort;
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(done);
  EXPECT_EQ(tokens.load(), 5);
  driver.cancel(id);
  while (!aborted && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(aborted);
}

namespace {
// One HTTP/1.1 request over a raw socket; returns the whole response (Connection: close).
std::string http(int port, const std::string& method, const std::string& path, const std::string& body) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return "";
  std::string req = method + " " + path +
                    " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n" +
                    "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)!write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}
}  // namespace

TEST(HttpServer, InProcessRoundTripWithFakeEngine) {
  test::FakeEngine engine(4);
  ServerConfig cfg;
  cfg.port = 0;
  cfg.http_threads = 16;
  HttpServer srv(cfg);
  int port = srv.start();
  EXPECT_NE(http(port, "GET", "/health", "").find("503"), std::string::npos);  // loading
  srv.attach(engine, engine.tokenizer(), ChatTemplate::for_model("", ""), "fake");
  EXPECT_NE(http(port, "GET", "/health", "").find("200 OK"), std::string::npos);
  std::string r = http(port, "POST", "/v1/completions", R"({"prompt": "hi", "max_tokens": 5, "stop": "d"})");
  EXPECT_NE(r.find("\"text\":\"abc\""), std::string::npos) << r;
  EXPECT_NE(r.find("\"finish_reason\":\"stop\""), std::string::npos) << r;
  std::string s = http(port, "POST", "/v1/chat/completions",
                       R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 3, "stream": true, "n": 2})");
  EXPECT_NE(s.find("data: [DONE]"), std::string::npos) << s;
  EXPECT_NE(s.find("\"index\":1"), std::string::npos) << s;
  EXPECT_NE(http(port, "PUT", "/v1/completions", "{}").find("405"), std::string::npos);
  EXPECT_NE(http(port, "POST", "/v1/completions", "{bad").find("invalid_json"), std::string::npos);
  srv.shutdown();
}

namespace {
// The JSON body of an HTTP response: after the blank line, de-chunked when the server chunked it.
json body_of(const std::string& r) {
  size_t at = r.find("\r\n\r\n");
  std::string b = at == std::string::npos ? "" : r.substr(at + 4);
  // De-chunk: "<hex>\r\n<data>\r\n" ... "0\r\n\r\n".
  if (r.find("Transfer-Encoding: chunked") != std::string::npos) {
    std::string out;
    size_t p = 0;
    while (p < b.size()) {
      size_t eol = b.find("\r\n", p);
      size_t len = std::stoul(b.substr(p, eol - p), nullptr, 16);
      if (len == 0) break;
      out += b.substr(eol + 2, len);
      p = eol + 2 + len + 2;
    }
    b = out;
  }
  return json::parse(b);
}
}  // namespace

// Prompt lists, echo, logit_bias and the response budget through the real request path.
TEST(HttpServer, PromptListsEchoBiasAndResponseBudget) {
  test::FakeEngine engine(8);
  ServerConfig cfg;
  cfg.port = 0;
  cfg.http_threads = 16;
  cfg.max_response_entries = 100;
  HttpServer srv(cfg);
  int port = srv.start();
  srv.attach(engine, engine.tokenizer(), ChatTemplate::for_model("", ""), "fake");
  // Two prompts x n 2: choices indexed prompt * n + sample, usage summed over the prompts.
  json r = body_of(http(port, "POST", "/v1/completions", R"({"prompt": ["hi", [3, 4, 5]], "n": 2, "max_tokens": 3})"));
  ASSERT_EQ(r["choices"].size(), 4u) << r;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r["choices"][i]["index"], i);
  EXPECT_EQ(r["choices"][3]["text"], "abc");
  EXPECT_EQ(r["usage"]["prompt_tokens"], 3 + 3);  // BOS + "hi", and three ids
  EXPECT_EQ(r["usage"]["completion_tokens"], 4 * 3);
  // Streamed: every choice index appears.
  std::string s = http(port, "POST", "/v1/completions", R"({"prompt": ["a", "b"], "n": 2, "max_tokens": 2, "stream": true})");
  for (int i = 0; i < 4; ++i) EXPECT_NE(s.find("\"index\":" + std::to_string(i)), std::string::npos) << s;
  // Echo: the prompt text (decoded for token ids) before each choice's text, streamed as a first chunk.
  json e = body_of(http(port, "POST", "/v1/completions", R"({"prompt": ["hi", [3, 107]], "echo": true, "max_tokens": 2})"));
  EXPECT_EQ(e["choices"][0]["text"], "hiab");
  EXPECT_EQ(e["choices"][1]["text"], std::string("\0h", 2) + "ab");
  std::string es = http(port, "POST", "/v1/completions", R"({"prompt": "hi", "echo": true, "max_tokens": 2, "stream": true})");
  EXPECT_NE(es.find("\"text\":\"hi\""), std::string::npos) << es;
  // logit_bias ids are checked against the vocabulary; other refused fields answer 400 too.
  std::string lb = http(port, "POST", "/v1/completions", R"({"prompt": "hi", "logit_bias": {"259": 1}})");
  EXPECT_NE(lb.find("400 Bad Request"), std::string::npos) << lb;
  EXPECT_EQ(body_of(lb)["error"]["param"], "logit_bias");
  json t = body_of(http(port, "POST", "/v1/chat/completions",
                        R"({"messages": [{"role": "user", "content": "x"}], "tools": {"type": "function"}})"));
  EXPECT_EQ(t["error"]["param"], "tools");
  json ct = body_of(http(port, "POST", "/v1/chat/completions",
                         R"({"messages": [{"role": "user", "content": [{"type": 5, "text": "x"}]}]})"));
  EXPECT_EQ(ct["error"]["type"], "invalid_request_error");
  EXPECT_EQ(ct["error"]["param"], "messages[0].content[0].type");
  // Budget 100 entries: n 2 x 30 tokens x (1 + 1 top logprob) = 120 is refused whole, allowed streamed.
  const char* big = R"({"prompt": "hi", "n": 2, "max_tokens": 30, "logprobs": 1})";
  json b = body_of(http(port, "POST", "/v1/completions", big));
  EXPECT_EQ(b["error"]["param"], "max_tokens") << b;
  EXPECT_EQ(b["error"]["code"], "response_too_large");
  std::string bs = http(port, "POST", "/v1/completions",
                        R"({"prompt": "hi", "n": 2, "max_tokens": 30, "logprobs": 1, "stream": true})");
  EXPECT_NE(bs.find("data: [DONE]"), std::string::npos) << bs.substr(0, 300);
  EXPECT_EQ(body_of(http(port, "POST", "/v1/completions", R"({"prompt": "hi", "n": 2, "max_tokens": 25, "logprobs": 1})"))
                ["choices"].size(), 2u);
  srv.shutdown();
}

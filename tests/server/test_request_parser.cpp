// RequestParser, inflate_bounded and json_deeper_than: framing, pipelining, every limit's status.
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>

#include "server/body_decoder.h"
#include "core/json_depth.h"
#include "server/request_parser.h"

using namespace tinfer::server;
using tinfer::json_deeper_than;
using tinfer::kMaxJsonDepth;
using Status = RequestParser::Status;

namespace {

ParseLimits small_limits() {
  ParseLimits l;
  l.max_header_bytes = 1024;
  l.max_headers = 8;
  l.max_body_bytes = 4096;
  return l;
}

std::string gzip(const std::string& in) {
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, in.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Parses `wire` fed in pieces of `step` bytes; returns the final status (and the parser's state).
Status feed(RequestParser& p, std::string& buf, const std::string& wire, size_t step) {
  Status st = Status::kNeedMore;
  for (size_t i = 0; i < wire.size() && st == Status::kNeedMore; i += step) {
    buf.append(wire, i, step);
    st = p.parse(buf);
  }
  return st;
}

}  // namespace

TEST(RequestParser, PipelinedRequestsComeOutInOrderWhateverTheSplit) {
  const std::string wire =
      "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /v1/completions?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
      "GET /v1/models HTTP/1.0\r\n\r\n";
  for (size_t step : {size_t{1}, size_t{7}, wire.size()}) {
    RequestParser p(small_limits());
    std::string buf;
    std::vector<HttpRequest> got;
    for (size_t i = 0; i < wire.size(); i += step) {
      buf.append(wire, i, step);
      while (p.parse(buf) == Status::kDone) got.push_back(p.take());
    }
    ASSERT_EQ(got.size(), 3u) << "step " << step;
    EXPECT_EQ(got[0].path, "/health");
    EXPECT_TRUE(got[0].keep_alive);
    EXPECT_EQ(got[1].method, "POST");
    EXPECT_EQ(got[1].path, "/v1/completions");
    EXPECT_EQ(got[1].body, "hello");
    EXPECT_FALSE(got[1].keep_alive);
    EXPECT_EQ(got[2].minor_version, 0);
    EXPECT_FALSE(got[2].keep_alive);
    EXPECT_TRUE(buf.empty());
  }
}

TEST(RequestParser, ChunkedBodyWithExtensionsAndTrailers) {
  RequestParser p(small_limits());
  std::string buf;
  std::string wire =
      "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n";
  ASSERT_EQ(feed(p, buf, wire, 3), Status::kDone);
  EXPECT_EQ(p.take().body, "hello world");
}

TEST(RequestParser, EveryLimitHasItsStatus) {
  struct Case {
    std::string wire;
    int status;
  };
  const std::string post = "POST / HTTP/1.1\r\nHost: x\r\n";
  std::string many;
  for (int i = 0; i < 9; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  const std::vector<Case> cases = {
      {post + "Content-Length: 4097\r\n\r\n", 413},
      {post + "Content-Length: 99999999999999999999999\r\n\r\n", 413},
      {post + "Transfer-Encoding: chunked\r\n\r\n1001\r\n", 413},
      {post + "Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffffffffff\r\n", 413},
      {post + "Transfer-Encoding: chunked\r\n\r\n800\r\n" + std::string(0x800, 'a') + "\r\n801\r\n", 413},
      {post + many + "\r\n", 431},
      {post + "X-Big: " + std::string(2000, 'a'), 431},  // no end of head yet: refused at the limit
      {post + "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {post + "Content-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {post + "Content-Length: -1\r\n\r\n", 400},
      {post + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {post + "Content-Encoding: br\r\nContent-Length: 1\r\n\r\n", 415},
      {post + "X: a\r\n  folded\r\n\r\n", 400},
      {post + "X : a\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX", 400},
  };
  for (const auto& c : cases) {
    RequestParser p(small_limits());
    std::string buf = c.wire;
    EXPECT_EQ(p.parse(buf), Status::kError) << c.wire;
    EXPECT_EQ(p.error_status(), c.status) << c.wire;
  }
}

TEST(RequestParser, ExpectContinueIsKnownOnceTheHeadIsIn) {
  RequestParser p(small_limits());
  std::string buf = "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n";
  EXPECT_EQ(p.parse(buf), Status::kNeedMore);
  EXPECT_TRUE(p.head_done());
  EXPECT_TRUE(p.expects_continue());
  EXPECT_EQ(p.head().path, "/");
  buf += "abc";
  EXPECT_EQ(p.parse(buf), Status::kDone);
}

TEST(RequestParser, GzipBodyIsDecodedAndTheDecodedSizeIsLimited) {
  std::string ok = gzip("{\"prompt\": \"x\"}");
  RequestParser p(small_limits());
  std::string buf =
      "POST / HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: " + std::to_string(ok.size()) + "\r\n\r\n" + ok;
  ASSERT_EQ(p.parse(buf), Status::kDone);
  EXPECT_EQ(p.take().body, "{\"prompt\": \"x\"}");

  std::string bomb = gzip(std::string(1 << 20, ' '));
  ASSERT_LT(bomb.size(), 4096u);
  RequestParser q(small_limits());
  buf =
      "POST / HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: " + std::to_string(bomb.size()) + "\r\n\r\n" + bomb;
  EXPECT_EQ(q.parse(buf), Status::kError);
  EXPECT_EQ(q.error_status(), 413);
}

TEST(BodyDecoder, CorruptAndTruncatedInputIsRefused) {
  std::string out;
  EXPECT_EQ(inflate_bounded("not gzip", BodyCoding::kGzip, 100, out), DecodeResult::kCorrupt);
  std::string z = gzip("hello hello hello");
  EXPECT_EQ(inflate_bounded(z.substr(0, z.size() - 4), BodyCoding::kGzip, 100, out), DecodeResult::kCorrupt);
  EXPECT_EQ(inflate_bounded(z, BodyCoding::kGzip, 100, out), DecodeResult::kOk);
  EXPECT_EQ(out, "hello hello hello");
  EXPECT_EQ(inflate_bounded(z, BodyCoding::kGzip, 16, out), DecodeResult::kTooLarge);
}

TEST(JsonDepth, CountsNestingOutsideStrings) {
  EXPECT_FALSE(json_deeper_than(R"({"a": [[1], {"b": 2}]})", 3));
  EXPECT_TRUE(json_deeper_than(R"({"a": [[1], {"b": [2]}]})", 3));
  EXPECT_FALSE(json_deeper_than(R"({"a": "[[[[\"[[[["})", 1));
  EXPECT_TRUE(json_deeper_than(std::string(65, '['), kMaxJsonDepth));
  EXPECT_FALSE(json_deeper_than(std::string(64, '[') + std::string(64, ']'), kMaxJsonDepth));
}

TEST(RequestParser, ManyTinyChunksCostLinearTime) {
  // 300k one-byte chunks in one buffer: consuming line by line from the buffer's front would move
  // the rest of the buffer once per chunk (~270 GB here); the cursor makes it one pass.
  ParseLimits l;
  l.max_body_bytes = 1 << 20;
  RequestParser p(l);
  std::string buf = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 300000; ++i) buf += "1\r\nx\r\n";
  buf += "0\r\n\r\n";
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(p.parse(buf), Status::kDone);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(p.take().body, std::string(300000, 'x'));
  EXPECT_LT(s, 1.0);
}

// Issue 26 §2.5: Host per RFC 9112 3.2 (exactly one valid Host in HTTP/1.1), absolute-form targets (3.2.2),
// and a TLS handshake refused from its first byte.
TEST(RequestParser, HostRulesOfHttp11) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"GET /health HTTP/1.1\r\n\r\n", 400},
      {"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
      {"GET /health HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400},
      {"GET /health HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
      {"GET /health HTTP/1.1\r\nHost: a/b\r\n\r\n", 400},
      {"GET /health HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400},
  };
  for (const auto& [wire, status] : cases) {
    RequestParser p(small_limits());
    std::string buf = wire;
    EXPECT_EQ(p.parse(buf), Status::kError) << wire;
    EXPECT_EQ(p.error_status(), status) << wire;
  }
  for (std::string ok : {"GET /health HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", "GET /health HTTP/1.1\r\nHost:\r\n\r\n",
                         "GET /health HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", "GET /health HTTP/1.0\r\n\r\n"}) {
    RequestParser p(small_limits());
    EXPECT_EQ(p.parse(ok), Status::kDone) << ok;
  }
}

TEST(RequestParser, AbsoluteFormTargetGivesItsPath) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"http://host/v1/completions", "/v1/completions"},
      {"HTTP://host:8000/v1/models?x=1", "/v1/models"},
      {"https://host", "/"},
      {"/plain?q=http://x/y", "/plain"},
  };
  for (const auto& [target, path] : cases) {
    RequestParser p(small_limits());
    std::string buf = "GET " + target + " HTTP/1.1\r\nHost: host\r\n\r\n";
    ASSERT_EQ(p.parse(buf), Status::kDone) << target;
    HttpRequest r = p.take();
    EXPECT_EQ(r.path, path) << target;
    EXPECT_EQ(r.target, target);
  }
}

TEST(RequestParser, TlsClientHelloIsRefusedAtItsFirstByte) {
  RequestParser p(small_limits());
  std::string buf("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);  // no line end: a head would wait
  EXPECT_EQ(p.parse(buf), Status::kError);
  EXPECT_EQ(p.error_status(), 400);
  // Also when its bytes happen to hold a line end (the head would then wait for a blank line).
  for (std::string hello : {std::string("\x16\x03\x01\n\x00\x01", 6), std::string("\x16\x03\r\n\r\n", 6),
                            std::string("GET\r\nHost: x\r\n"), std::string(" GET / HTTP/1.1\r\n")}) {
    RequestParser r(small_limits());
    EXPECT_EQ(r.parse(hello), Status::kError) << hello;
    EXPECT_EQ(r.error_status(), 400);
  }
  // A method arriving byte by byte is not refused early, and leading empty lines are still skipped.
  RequestParser q(small_limits());
  std::string wire = "\r\n\r\nGET /x HTTP/1.1\r\nHost: h\r\n\r\n", b;
  EXPECT_EQ(feed(q, b, wire, 1), Status::kDone);
  RequestParser lf(small_limits());
  std::string wire_lf = "\nGET /x HTTP/1.1\nHost: h\n\n", b2;
  EXPECT_EQ(feed(lf, b2, wire_lf, 1), Status::kDone);
}

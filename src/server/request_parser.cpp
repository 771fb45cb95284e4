// Request line and headers per RFC 9112 (strict where leniency enables request smuggling: no
// obs-fold, no whitespace before ':', Content-Length and Transfer-Encoding never both; exactly one valid
// Host in HTTP/1.1, at most one in 1.0), then the body by Content-Length or chunked framing, then
// Content-Encoding.
#include "server/request_parser.h"

#include <cctype>
#include <optional>
#include <utility>

namespace tinfer::server {

namespace {

constexpr size_t kMaxChunkLine = 1024;  // chunk size + extensions

bool is_tchar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "a, b ,c" into lower-cased, trimmed tokens.
std::vector<std::string> tokens(std::string_view v) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= v.size()) {
    size_t j = v.find(',', i);
    if (j == std::string_view::npos) j = v.size();
    auto t = trim(v.substr(i, j - i));
    if (!t.empty()) out.push_back(lower(t));
    i = j + 1;
  }
  return out;
}

// The path of a request target: origin-form "/p?q" -> "/p"; absolute-form "http://host/p?q" -> "/p" (RFC 9112
// 3.2.2: a server must accept it, as proxies send it), "http://host" -> "/".
std::string_view path_of(std::string_view target) {
  std::string_view t = target.substr(0, target.find('?'));
  size_t scheme = t.find("://");
  if (t.empty() || t.front() == '/' || scheme == std::string_view::npos) return t;
  std::string s = lower(t.substr(0, scheme));
  if (s != "http" && s != "https") return t;
  size_t slash = t.find('/', scheme + 3);
  return slash == std::string_view::npos ? std::string_view("/") : t.substr(slash);
}

// A Host value: uri-host [ ":" port ] (RFC 9112 3.2, RFC 3986 3.2.2): reg-name, IPv4 or [IP-literal]
// characters only; empty is allowed (a target without authority).
bool valid_host(std::string_view v) {
  for (char c : v)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("-._~!$&'()*+,;=%:[]").find(c) == std::string_view::npos)
      return false;
  return true;
}

}  // namespace

RequestParser::Status RequestParser::fail(int status, std::string message) {
  state_ = State::kError;
  err_status_ = status;
  err_message_ = std::move(message);
  return Status::kError;
}

// Consumes through a cursor and erases the consumed prefix once per call: erasing line by line
// would make many tiny chunks (or blank lines) cost quadratic time on the reactor.
RequestParser::Status RequestParser::parse(std::string& buf) {
  size_t pos = 0;
  Status st = consume(buf, pos);
  buf.erase(0, pos);
  return st;
}

// One state's step per iteration: a step returns the status to answer, or nullopt once it moved to another state.
RequestParser::Status RequestParser::consume(const std::string& buf, size_t& pos) {
  using Step = std::optional<Status> (RequestParser::*)(const std::string&, size_t&);
  // The step of each receiving state, in State's order (kDone and kError end the call).
  static constexpr Step kSteps[] = {&RequestParser::consume_head,       &RequestParser::consume_body_bytes,
                                    &RequestParser::consume_chunk_size, &RequestParser::consume_body_bytes,
                                    &RequestParser::consume_chunk_end,  &RequestParser::consume_trailers};
  static_assert(static_cast<int>(State::kHead) == 0 && static_cast<int>(State::kFixedBody) == 1 &&
                    static_cast<int>(State::kChunkSize) == 2 && static_cast<int>(State::kChunkData) == 3 &&
                    static_cast<int>(State::kChunkDataEnd) == 4 && static_cast<int>(State::kTrailers) == 5 &&
                    static_cast<int>(State::kDone) == 6 && static_cast<int>(State::kError) == 7,
                "kSteps follows State's order");
  for (;;) {
    if (state_ == State::kDone) return Status::kDone;
    if (state_ == State::kError) return Status::kError;
    if (std::optional<Status> st = (this->*kSteps[static_cast<int>(state_)])(buf, pos)) return *st;
  }
}

std::optional<RequestParser::Status> RequestParser::consume_head(const std::string& buf, size_t& pos) {
  // head_scan_: bytes of complete head lines seen so far, counted from pos.
  for (;;) {
    size_t nl = buf.find('\n', pos + head_scan_);
    if (nl == std::string::npos) break;
    size_t len = nl - (pos + head_scan_);
    if (len > 0 && buf[nl - 1] == '\r') --len;
    if (len > 0) {
      head_scan_ = nl + 1 - pos;
      if (head_scan_ > limits_.max_header_bytes) break;
      continue;
    }
    if (head_scan_ == 0) {  // empty lines before a request line are ignored (RFC 9112 2.2)
      pos = nl + 1;
      method_scan_ = 0;
      continue;
    }
    std::string head = buf.substr(pos, head_scan_);
    pos = nl + 1;
    head_scan_ = 0;
    Status s = parse_head(head);
    if (s != Status::kNeedMore) return s;
    return std::nullopt;  // the body's state
  }
  size_t pending = buf.size() - pos;
  if (pending > 0) started_ = true;
  if (!method_checked(buf, pos))
    return fail(400, "not an HTTP request (a TLS handshake on the plain-HTTP port?)");
  if (pending > limits_.max_header_bytes || head_scan_ > limits_.max_header_bytes)
    return fail(431, "request head larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
  return Status::kNeedMore;
}

// The request line's method as far as it has arrived: a byte no method may hold (a TLS ClientHello's
// 0x16), or a line ending before the method's space, is refused at once, not after the head deadline.
// pos is past any empty lines; method_scan_ remembers how far the check got, so a head trickling in byte
// by byte costs linear time.
bool RequestParser::method_checked(const std::string& buf, size_t pos) {
  if (method_whole_) return true;
  for (; pos + method_scan_ < buf.size(); ++method_scan_) {
    char c = buf[pos + method_scan_];
    if (c == ' ') return method_whole_ = method_scan_ > 0;  // parse_request_line checks the rest
    if (!is_tchar(c)) return c == '\r' && method_scan_ == 0 && pos + 1 == buf.size();  // an empty line's CR
  }
  return true;
}

// Content-Length bytes, or the current chunk's.
std::optional<RequestParser::Status> RequestParser::consume_body_bytes(const std::string& buf, size_t& pos) {
  size_t n = std::min(remaining_, buf.size() - pos);
  req_.body.append(buf, pos, n);
  pos += n;
  remaining_ -= n;
  if (remaining_ > 0) return Status::kNeedMore;
  if (state_ == State::kFixedBody) return finish_body();
  state_ = State::kChunkDataEnd;
  return std::nullopt;
}

// The line end after a chunk's data.
std::optional<RequestParser::Status> RequestParser::consume_chunk_end(const std::string& buf, size_t& pos) {
  size_t avail = buf.size() - pos;
  if (avail == 0 || (buf[pos] == '\r' && avail < 2)) return Status::kNeedMore;
  size_t n = buf[pos] == '\n' ? 1 : (buf[pos] == '\r' && buf[pos + 1] == '\n') ? 2 : 0;
  if (n == 0) return fail(400, "chunk data not followed by CRLF");
  pos += n;
  state_ = State::kChunkSize;
  return std::nullopt;
}

// "hex-size[;extensions]" CRLF; size 0 starts the trailers.
std::optional<RequestParser::Status> RequestParser::consume_chunk_size(const std::string& buf, size_t& pos) {
  size_t nl = buf.find('\n', pos);
  if (nl == std::string::npos) {
    if (buf.size() - pos > kMaxChunkLine) return fail(400, "chunk size line too long");
    return Status::kNeedMore;
  }
  if (nl - pos > kMaxChunkLine) return fail(400, "chunk size line too long");
  std::string_view line(buf.data() + pos, nl - pos);
  line = trim(line.substr(0, line.find(';')));  // chunk extensions are ignored
  if (!line.empty() && line.back() == '\r') line = trim(line.substr(0, line.size() - 1));
  if (line.empty()) return fail(400, "missing chunk size");
  size_t size = 0;
  for (char c : line) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return fail(400, "invalid chunk size");
    if (size > limits_.max_body_bytes) break;  // already too large; stops overflow
    size = size * 16 +
           static_cast<size_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10);
  }
  if (size > limits_.max_body_bytes - req_.body.size())
    return fail(413, "request body larger than " + std::to_string(limits_.max_body_bytes) + " bytes");
  pos = nl + 1;
  remaining_ = size;
  state_ = size == 0 ? State::kTrailers : State::kChunkData;
  return std::nullopt;
}

// Trailer lines up to the empty one, counted against max_header_bytes and dropped.
std::optional<RequestParser::Status> RequestParser::consume_trailers(const std::string& buf, size_t& pos) {
  size_t nl = buf.find('\n', pos);
  size_t used = nl == std::string::npos ? buf.size() - pos : nl + 1 - pos;
  if (trailer_bytes_ + used > limits_.max_header_bytes)
    return fail(431, "chunked trailers larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
  if (nl == std::string::npos) return Status::kNeedMore;
  bool empty = used == 1 || (used == 2 && buf[pos] == '\r');
  trailer_bytes_ += used;
  pos += used;  // trailer fields are not used
  if (empty) return finish_body();
  return std::nullopt;
}

// The framing headers as received (several lines of one are joined; Content-Length ones must agree).
struct RequestParser::Framing {
  std::string content_length, transfer_encoding, content_encoding;
  bool has_cl = false, has_te = false;
  int hosts = 0;  // Host lines
};

RequestParser::Status RequestParser::parse_head(const std::string& head) {
  started_ = true;
  std::vector<std::string_view> lines;
  for (size_t i = 0; i < head.size();) {
    size_t nl = head.find('\n', i);
    std::string_view l(head.data() + i, nl - i);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.push_back(l);
    i = nl + 1;
  }
  if (lines.size() - 1 > limits_.max_headers)
    return fail(431, "more than " + std::to_string(limits_.max_headers) + " header fields");
  if (auto st = parse_request_line(lines[0])) return *st;
  Framing f;
  bool keep_alive = req_.minor_version == 1;
  for (size_t i = 1; i < lines.size(); ++i)
    if (auto st = parse_header_line(lines[i], f, keep_alive)) return *st;
  if (f.hosts == 0 && req_.minor_version == 1) return fail(400, "HTTP/1.1 request without a Host header");
  req_.keep_alive = keep_alive;
  return start_body(f);
}

// Request line: METHOD SP request-target SP HTTP-version.
std::optional<RequestParser::Status> RequestParser::parse_request_line(std::string_view rl) {
  size_t a = rl.find(' '), b = a == std::string_view::npos ? a : rl.find(' ', a + 1);
  if (b == std::string_view::npos || rl.find(' ', b + 1) != std::string_view::npos)
    return fail(400, "malformed request line");
  std::string_view method = rl.substr(0, a), target = rl.substr(a + 1, b - a - 1), version = rl.substr(b + 1);
  if (method.empty()) return fail(400, "malformed request line");
  for (char c : method)
    if (!is_tchar(c)) return fail(400, "malformed request method");
  if (target.empty()) return fail(400, "empty request target");
  for (char c : target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return fail(400, "control character in request target");
  if (version == "HTTP/1.1")
    req_.minor_version = 1;
  else if (version == "HTTP/1.0")
    req_.minor_version = 0;
  else if (version.substr(0, 5) == "HTTP/")
    return fail(505, "only HTTP/1.0 and HTTP/1.1 are supported");
  else
    return fail(400, "malformed HTTP version");
  req_.method = method;
  req_.target = target;
  req_.path = path_of(target);
  return std::nullopt;
}

// One "name: value" line: its syntax checked, the framing and connection headers noted, every one kept.
std::optional<RequestParser::Status> RequestParser::parse_header_line(std::string_view l, Framing& f,
                                                                      bool& keep_alive) {
  if (l.front() == ' ' || l.front() == '\t') return fail(400, "obsolete header line folding");
  size_t colon = l.find(':');
  if (colon == std::string_view::npos || colon == 0) return fail(400, "malformed header line");
  for (char c : l.substr(0, colon))
    if (!is_tchar(c)) return fail(400, "malformed header name");
  std::string name = lower(l.substr(0, colon));
  std::string_view value = trim(l.substr(colon + 1));
  for (char c : value)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
      return fail(400, "control character in header " + name);
  if (name == "content-length") {
    std::string v(value);
    if (f.has_cl && v != f.content_length) return fail(400, "conflicting Content-Length headers");
    f.has_cl = true;
    f.content_length = v;
  } else if (name == "transfer-encoding") {
    f.transfer_encoding += (f.has_te ? "," : "") + std::string(value);
    f.has_te = true;
  } else if (name == "content-encoding") {
    f.content_encoding += (f.content_encoding.empty() ? "" : ",") + std::string(value);
  } else if (name == "connection") {
    for (const auto& t : tokens(value)) {
      if (t == "close") keep_alive = false;
      if (t == "keep-alive") keep_alive = true;
    }
  } else if (name == "host") {
    if (f.hosts++ > 0) return fail(400, "more than one Host header");
    if (!valid_host(value)) return fail(400, "invalid Host header");
  } else if (name == "expect") {
    expect_continue_ = req_.minor_version == 1 && lower(value) == "100-continue";
  }
  req_.headers.emplace_back(std::move(name), std::string(value));
  return std::nullopt;
}

// The body's coding and framing: chunked, Content-Length bytes, or none.
RequestParser::Status RequestParser::start_body(const Framing& f) {
  const std::string too_large = "request body larger than " + std::to_string(limits_.max_body_bytes) + " bytes";
  coding_ = body_coding(f.content_encoding);
  if (coding_ == BodyCoding::kUnsupported)
    return fail(415, "Content-Encoding '" + f.content_encoding + "' is not supported (use gzip or deflate)");
  if (f.has_te) {
    if (f.has_cl) return fail(400, "both Content-Length and Transfer-Encoding");
    auto te = tokens(f.transfer_encoding);
    if (te.size() != 1 || te[0] != "chunked")
      return fail(501, "Transfer-Encoding '" + f.transfer_encoding + "' is not supported (only chunked)");
    if (req_.minor_version == 0) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    state_ = State::kChunkSize;
    return Status::kNeedMore;
  }
  if (f.has_cl) {
    const std::string& content_length = f.content_length;
    if (content_length.empty() || content_length.size() > 19)
      return content_length.empty() ? fail(400, "empty Content-Length") : fail(413, too_large);
    size_t n = 0;
    for (char c : content_length) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return fail(400, "invalid Content-Length");
      n = n * 10 + static_cast<size_t>(c - '0');
    }
    if (n > limits_.max_body_bytes) return fail(413, too_large);
    remaining_ = n;
    if (n > 0) {
      state_ = State::kFixedBody;
      return Status::kNeedMore;
    }
  }
  return finish_body();
}

RequestParser::Status RequestParser::finish_body() {
  if (coding_ != BodyCoding::kIdentity) {
    std::string decoded;
    DecodeResult r = inflate_bounded(req_.body, coding_, limits_.max_body_bytes, decoded);
    if (r == DecodeResult::kTooLarge)
      return fail(413, "decoded request body larger than " + std::to_string(limits_.max_body_bytes) + " bytes");
    if (r == DecodeResult::kCorrupt)
      return fail(
          400, "request body is not valid " + std::string(coding_ == BodyCoding::kGzip ? "gzip" : "deflate") + " data");
    req_.body = std::move(decoded);
  }
  state_ = State::kDone;
  return Status::kDone;
}

HttpRequest RequestParser::take() {
  HttpRequest r = std::move(req_);
  req_ = HttpRequest{};
  state_ = State::kHead;
  started_ = false;
  head_scan_ = remaining_ = trailer_bytes_ = method_scan_ = 0;
  expect_continue_ = method_whole_ = false;
  coding_ = BodyCoding::kIdentity;
  return r;
}

}  // namespace tinfer::server

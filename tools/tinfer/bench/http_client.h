// A minimal blocking HTTP/1.1 client for `tinfer bench serve`: one connection per request
// (Connection: close), a POST or GET with a JSON body, the response head, then the body by Content-Length,
// chunked coding or until close, read as SSE `data:` payloads or whole. Every connect and read waits at
// most until a deadline (seconds on core/timer.h's now_s clock); failures throw HttpFailure with a kind.
#pragma once
#include <map>
#include <stdexcept>
#include <string>

namespace tinfer::cli {

struct HttpUrl {
  std::string host;
  int port = 80;
  std::string path;  // without a trailing '/', "" for the root
};

// "http://host[:port][/path]"; Error for anything else (https is not supported).
HttpUrl parse_http_url(const std::string& url);

struct HttpFailure : std::runtime_error {
  enum Kind { kConnection, kTimeout };
  Kind kind;
  HttpFailure(Kind k, const std::string& what) : std::runtime_error(what), kind(k) {}
};

class HttpResponse {
 public:
  // Connects, sends the request and reads the status line and headers. Throws HttpFailure.
  HttpResponse(const HttpUrl& url, const std::string& method, const std::string& path, const std::string& body,
               const std::map<std::string, std::string>& headers, double deadline);
  ~HttpResponse();
  HttpResponse(const HttpResponse&) = delete;
  HttpResponse& operator=(const HttpResponse&) = delete;

  int status() const { return status_; }
  // The next SSE `data:` payload (comments and other fields skipped); false when the body ended cleanly.
  // Throws HttpFailure when the connection breaks (mid-chunk, mid-line) or the deadline passes.
  bool next_sse_data(std::string& payload, double deadline);
  // The rest of the body (at most `limit` bytes kept). Throws HttpFailure like next_sse_data.
  std::string read_body(double deadline, size_t limit = 1 << 20);

 private:
  void send_request_and_read_head(const HttpUrl& url, const std::string& method, const std::string& path,
                                  const std::string& body, const std::map<std::string, std::string>& headers,
                                  double deadline);
  bool fill(double deadline);                          // false at EOF
  std::string read_line(double deadline);              // one CRLF/LF line of the raw stream, without the terminator
  bool body_bytes(std::string& out, double deadline);  // appends some decoded body bytes; false at its end

  int fd_ = -1;
  int status_ = 0;
  std::string buf_;  // raw bytes received and not yet consumed
  enum class Framing { kLength, kChunked, kClose } framing_ = Framing::kClose;
  long long remaining_ = 0;  // kLength: body bytes left; kChunked: bytes left in the current chunk
  bool body_done_ = false;
  std::string sse_;  // decoded body bytes not yet split into lines
};

}  // namespace tinfer::cli

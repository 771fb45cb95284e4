// One HTTP/1.1 request as the connection layer hands it to a handler, and the response a handler
// fills in: either a whole body (sent with Content-Length) or a stream (sent chunked as written).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tinfer::server {

struct HttpRequest {
  std::string method;                                        // as sent ("GET", "POST", ...)
  std::string target;                                        // request-target as sent, query included
  std::string path;                                          // target up to '?'
  int minor_version = 1;                                     // HTTP/1.<minor_version>
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, values trimmed
  std::string body;        // de-chunked and decoded (Content-Encoding), at most the body limit
  bool keep_alive = true;  // HTTP/1.1 without "Connection: close", or 1.0 with "keep-alive"

  // Value of the first header named `lower_name`, "" if absent.
  std::string header(std::string_view lower_name) const {
    for (const auto& [k, v] : headers)
      if (k == lower_name) return v;
    return "";
  }
};

// What a streaming handler writes through. Calling it sends one chunk (false: the client is gone or stalled);
// peer_gone() asks whether the client has closed or reset the connection while writing nothing, so a handler
// with nothing to say yet (a request waiting for its first token, a whole response being generated) can still
// notice a vanished client without putting bytes on the wire that some clients mis-parse.
struct BodyWriter {
  std::function<bool(std::string_view)> write;
  std::function<bool()> gone;  // empty: no probe (never gone)

  bool operator()(std::string_view d) const { return write(d); }
  bool peer_gone() const { return gone && gone(); }
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Content-* are set by the layer)
  std::string content_type = "application/json";
  std::string body;
  // When set, called once after the head is written; each write is sent as one chunk.
  std::function<void(const BodyWriter&)> stream;

  void set_header(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
  void set_content(std::string b, std::string type) {
    body = std::move(b);
    content_type = std::move(type);
  }
};

}  // namespace tinfer::server

// Incremental, bounded HTTP/1.1 request parser. The connection layer appends received bytes to a
// buffer and calls parse(); the parser consumes what it can. Every byte it keeps is bounded:
// the head by max_header_bytes/max_headers (431), the body — Content-Length, chunked, and after
// gzip/deflate decoding — by max_body_bytes (413). Bytes after a complete request stay in the
// buffer for the next one (pipelining).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "server/body_decoder.h"
#include "server/http_message.h"

namespace tinfer::server {

struct ParseLimits {
  size_t max_header_bytes = 32 << 10;  // request line + header lines (+ chunked trailers)
  size_t max_headers = 100;
  size_t max_body_bytes = 1 << 20;  // on the wire and after decoding
};

class RequestParser {
 public:
  enum class Status { kNeedMore, kDone, kError };

  explicit RequestParser(ParseLimits limits) : limits_(limits) {}

  // Consumes bytes from the front of `buf`. kDone: take() the request; kError: error_status()
  // and error_message() say what to answer, and the connection must close.
  Status parse(std::string& buf);

  bool started() const { return started_; }  // some byte of the current request has arrived
  bool head_done() const { return state_ != State::kHead; }
  bool expects_continue() const { return expect_continue_; }
  // Bytes of the request being received that the parser holds (body buffer capacity).
  size_t held_bytes() const { return req_.body.capacity(); }
  // Method, target and headers once head_done() (the body is still being received).
  const HttpRequest& head() const { return req_; }
  int error_status() const { return err_status_; }
  const std::string& error_message() const { return err_message_; }

  // The parsed request; resets the parser for the next one on the same connection.
  HttpRequest take();

 private:
  // (consume()'s step table follows this order.)
  enum class State { kHead, kFixedBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kDone, kError };

  struct Framing;

  Status consume(const std::string& buf, size_t& pos);  // parse() from buf[pos], advancing pos
  // consume()'s steps, one per state: the status to answer, or nullopt once the state changed.
  std::optional<Status> consume_head(const std::string& buf, size_t& pos);
  std::optional<Status> consume_body_bytes(const std::string& buf, size_t& pos);
  std::optional<Status> consume_chunk_end(const std::string& buf, size_t& pos);
  std::optional<Status> consume_chunk_size(const std::string& buf, size_t& pos);
  std::optional<Status> consume_trailers(const std::string& buf, size_t& pos);
  bool method_checked(const std::string& buf, size_t pos);  // false: the first line cannot be a request line
  Status fail(int status, std::string message);
  Status parse_head(const std::string& head);
  // parse_head()'s steps: nullopt when the line is good, else fail()'s status.
  std::optional<Status> parse_request_line(std::string_view line);
  std::optional<Status> parse_header_line(std::string_view line, Framing& f, bool& keep_alive);
  Status start_body(const Framing& f);
  Status finish_body();

  ParseLimits limits_;
  State state_ = State::kHead;
  bool started_ = false;
  size_t head_scan_ = 0;  // bytes of complete head lines seen so far (from the unconsumed start)
  size_t method_scan_ = 0;  // bytes of the request line's method checked so far (from the same start)
  bool method_whole_ = false;  // the method's ending space has arrived
  size_t remaining_ = 0;  // body bytes left (fixed length) or in the current chunk
  size_t trailer_bytes_ = 0;
  bool expect_continue_ = false;
  BodyCoding coding_ = BodyCoding::kIdentity;
  HttpRequest req_;
  int err_status_ = 0;
  std::string err_message_;
};

}  // namespace tinfer::server

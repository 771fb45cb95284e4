// Writing one HTTP/1.1 response to a socket: the head, then the whole body (Content-Length) or the
// handler's stream (chunked; close-delimited for HTTP/1.0), every send bounded by a stall deadline
// so a client that stops reading fails the write instead of holding the worker. A client that keeps
// reading, slower than the producer, is not cut: the producer blocks in the write (back-pressure), and what waits for the
// client is bounded by the socket's send buffer (HttpConnConfig::send_buffer_bytes).
#pragma once
#include <chrono>
#include <string>
#include <string_view>

#include "server/http_message.h"

namespace tinfer::server {

// The status line's reason phrase ("Payload Too Large" for 413, ...).
const char* reason_phrase(int status);

enum class Framing { kLength, kChunked, kUntilClose };

// Status line and headers, ending with the blank line.
std::string head_text(const HttpResponse& r, Framing framing, bool keep_alive);

// Sends all of `data` on a non-blocking socket; false when the peer is gone or acknowledged no byte
// for `stall` (the kernel's queue for it did not shrink).
bool send_all(int fd, std::string_view data, std::chrono::steady_clock::duration stall);

// Writes `res` as the answer to `req` (HEAD: the head only; a stream: runs res.stream). Returns true
// when the connection may carry another request (keep_alive and everything was sent).
bool write_response(int fd, const HttpRequest& req, HttpResponse& res, bool keep_alive,
                    std::chrono::steady_clock::duration stall);

}  // namespace tinfer::server

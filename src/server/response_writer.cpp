// See response_writer.h. Non-blocking sends; when the socket's buffer is full, wait_writable() waits
// for room as long as the peer keeps acknowledging bytes.
#include "server/response_writer.h"

#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "server/peer_probe.h"

namespace tinfer::server {

const char* reason_phrase(int s) {
  switch (s) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return s < 300 ? "OK" : s < 500 ? "Bad Request" : "Internal Server Error";
  }
}

std::string head_text(const HttpResponse& r, Framing framing, bool keep_alive) {
  std::string h = "HTTP/1.1 " + std::to_string(r.status) + " " + reason_phrase(r.status) + "\r\n";
  h += "Content-Type: " + r.content_type + "\r\n";
  if (framing == Framing::kLength) h += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  if (framing == Framing::kChunked) h += "Transfer-Encoding: chunked\r\n";
  for (const auto& [k, v] : r.headers) h += k + ": " + v + "\r\n";
  h += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return h;
}

namespace {

constexpr long kMinProgressBytes = 1024;

// Bytes the kernel still holds for the peer (unsent + sent but not acknowledged); -1 when unknown.
long queued_for_peer(int fd) {
  int n = 0;
  return ::ioctl(fd, SIOCOUTQ, &n) == 0 ? n : -1;
}

// Waits until the socket can take more bytes. The deadline is one of no progress: POLLOUT only comes once
// about a third of the send buffer is free, and a steady reader slower than the producer frees it in
// the steps its receive window reopens by (a segment or more; see kMaxSegment in http_conn.cpp), so
// waiting for POLLOUT alone cut a reader still taking 100 KB/s (issue 26). Every `slice` the kernel's queue
// is looked at instead, and kMinProgressBytes acknowledged since the last restart restart the stall clock
// (any byte would let a reader trickling one a second hold the worker as long as it liked). False: the peer
// took less than that for `stall`, or the socket failed.
bool wait_writable(int fd, std::chrono::steady_clock::duration stall) {
  using Clock = std::chrono::steady_clock;
  const auto slice = std::clamp(stall / 4, Clock::duration(std::chrono::milliseconds(10)),
                                Clock::duration(std::chrono::milliseconds(250)));
  const int slice_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(slice).count());
  Clock::time_point progress = Clock::now();
  long queued = queued_for_peer(fd), taken = 0;  // bytes the peer acknowledged since `progress`
  for (;;) {
    pollfd p{fd, POLLOUT, 0};
    int r = ::poll(&p, 1, slice_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || (r > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)))) return false;
    if (r > 0) return true;
    Clock::time_point now = Clock::now();
    long q = queued_for_peer(fd);
    if (q >= 0 && queued >= 0 && q < queued) taken += queued - q;
    // Progress is kMinProgressBytes acknowledged, not any byte: a reader trickling a byte a second would
    // otherwise hold the worker for as long as it likes (the minimum rate is kMinProgressBytes per `stall`).
    if (taken >= kMinProgressBytes) progress = now, taken = 0;
    queued = q;
    if (now - progress >= stall) return false;
  }
}

}  // namespace

// Sends all of `data`; false when the peer is gone or took no byte for `stall`.
bool send_all(int fd, std::string_view data, std::chrono::steady_clock::duration stall) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_writable(fd, stall)) return false;
      continue;
    }
    return false;
  }
  return true;
}

bool write_response(int fd, const HttpRequest& req, HttpResponse& res, bool keep,
                    std::chrono::steady_clock::duration stall) {
  if (req.method == "HEAD") return send_all(fd, head_text(res, Framing::kLength, keep), stall) && keep;
  if (!res.stream) return send_all(fd, head_text(res, Framing::kLength, keep) + res.body, stall) && keep;
  // HTTP/1.0 has no chunked coding: the body ends when the connection closes.
  const bool chunked = req.minor_version >= 1;
  keep = keep && chunked;
  bool ok = send_all(fd, head_text(res, chunked ? Framing::kChunked : Framing::kUntilClose, keep), stall);
  auto write = [&](std::string_view d) {
    if (!ok) return false;
    if (d.empty()) return true;
    if (!chunked) return ok = send_all(fd, d, stall);
    char size[24];
    int k = std::snprintf(size, sizeof size, "%zx\r\n", d.size());
    std::string chunk;
    chunk.reserve(static_cast<size_t>(k) + d.size() + 2);
    chunk.append(size, static_cast<size_t>(k)).append(d).append("\r\n");
    return ok = send_all(fd, chunk, stall);
  };
  // The handler may ask whether the client is still there without writing (see peer_probe.h).
  // A client found gone ends the body without its terminating chunk, so nothing reading on (a half-closed
  // client, a proxy) takes the cut response for a complete one.
  const BodyWriter writer{write, [&] { return !ok || !(ok = !peer_gone(fd)); }};
  try {
    res.stream(writer);
  } catch (...) {
    ok = false;  // the head is out: the only way left to say "failed" is an incomplete body
  }
  if (ok && chunked) ok = send_all(fd, "0\r\n\r\n", stall);
  return ok && keep;
}

}  // namespace tinfer::server

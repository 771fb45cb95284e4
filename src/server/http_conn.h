// Our own HTTP/1.1 connection layer (replaces httplib 0.11, which could not bound header count,
// chunked or decoded bodies, had no whole-header deadline, dropped pipelined requests and hid the
// socket from handlers). One reactor thread owns every connection that is between requests: it
// accepts, reads and parses with deadlines (RequestParser bounds every byte held), answers 4xx
// itself, and hands each complete request to a fixed pool of worker threads. A slow client thus
// costs a buffer, never a worker. Cheap requests (/health, /metrics) can be answered by the reactor
// itself (HttpFastRoute), so they never wait for a worker. Workers run the handler and write the response with a send-stall
// deadline, then give the connection back (keep-alive, pipelined bytes stay in its buffer).
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "server/http_message.h"
#include "server/request_parser.h"

namespace tinfer::server {

struct HttpConnConfig {
  std::string host = "127.0.0.1";
  int port = 0;              // 0 = any free port
  int worker_threads = 512;  // requests handled at once (a stream holds one until it ends)
  // Open connections; at the cap one that has not sent a whole request head is closed to make
  // room, else the new one gets 503.
  int max_connections = 1024;
  ParseLimits limits;
  double header_timeout_s = 10;  // connection open / first byte of a request -> whole head received
  double body_timeout_s = 30;    // head received -> whole body received
  double keep_alive_s = 2;       // idle connection between requests -> closed
  double send_stall_s = 2;       // a response write that makes no progress this long fails
  // All requests being received, or received and not yet handled, hold at most this much together;
  // a connection that would add more is refused (503), so many bodies at once cannot exhaust memory.
  size_t max_buffered_bytes = 256 << 20;
  int send_buffer_bytes = 128 << 10;  // SO_SNDBUF: bounds what a non-reading client leaves queued
};

// Runs on a worker thread; must not throw (exceptions become a bare 500).
using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;
// Fills in the response for an error the layer detects itself (400, 408, 413, 415, 431, 501, 503, 505).
using HttpErrorPage = std::function<void(int status, const std::string& message, HttpResponse&)>;

// Runs on the reactor thread as soon as a request's head is in, before its body is read; returns
// true after filling `res` with a refusal (auth, queue full), which is sent and the connection
// closed. Must be cheap and never block.
using HttpHeadCheck = std::function<bool(const HttpRequest& head, HttpResponse& res)>;

// Runs on the reactor thread once a whole request is in; returns true after filling `res` (a whole body,
// no stream), which the reactor writes without blocking, so the answer needs no worker: /health and
// /metrics stay answered while streams hold every worker. Must be cheap, never block and never throw.
using HttpFastRoute = std::function<bool(const HttpRequest& req, HttpResponse& res)>;

class HttpListener {
 public:
  HttpListener(HttpConnConfig config, HttpHandler handler, HttpErrorPage error_page, HttpHeadCheck head_check = {},
               HttpFastRoute fast_route = {});
  ~HttpListener();  // stop(now) if running

  // Binds and listens; returns the port. Throws Error when the address cannot be bound.
  int bind();
  // Starts the reactor and the workers.
  void start();
  // Stops accepting and closes idle connections at once; a partly received request gets until
  // `deadline`. Returns when every connection is closed; a handler still running is waited for
  // (handlers bound their own time; writes are bounded by send_stall_s).
  void stop(std::chrono::steady_clock::time_point deadline);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tinfer::server

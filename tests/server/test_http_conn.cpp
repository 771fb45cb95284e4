// HttpListener in process with trivial handlers (no engine): keep-alive and pipelining, the head and
// body deadlines, refusals from the head, send-stall detection, and stop() with slow connections.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "server/http_conn.h"

using namespace tinfer::server;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int dial(int port, int rcvbuf = 0) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

void put(int fd, const std::string& s) { ASSERT_EQ(send(fd, s.data(), s.size(), MSG_NOSIGNAL), ssize_t(s.size())); }

// Everything the server sends until it closes or `limit_s` passes.
std::string drain(int fd, double limit_s = 5) {
  std::string out;
  auto t0 = Clock::now();
  char buf[4096];
  while (since(t0) < limit_s) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

struct Fixture {
  explicit Fixture(HttpConnConfig cfg, HttpHandler h, HttpHeadCheck check = {}, HttpFastRoute fast = {})
      : listener(
            cfg, std::move(h),
            [](int status, const std::string& m, HttpResponse& r) {
              r.status = status;
              r.set_content(m, "text/plain");
            },
            std::move(check), std::move(fast)) {
    port = listener.bind();
    listener.start();
  }
  HttpListener listener;
  int port = 0;
};

HttpConnConfig quick() {
  HttpConnConfig c;
  c.worker_threads = 2;
  c.header_timeout_s = 0.4;
  c.body_timeout_s = 0.4;
  c.send_stall_s = 0.3;
  c.limits.max_body_bytes = 4096;
  return c;
}

void echo(const HttpRequest& q, HttpResponse& r) {
  r.set_content(q.method + " " + q.target + " " + q.body, "text/plain");
}

}  // namespace

TEST(HttpConn, PipelinedRequestsAreAllAnsweredInOrder) {
  Fixture f(quick(), echo);
  int fd = dial(f.port);
  put(fd,
      "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz"
      "GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string out = drain(fd);
  close(fd);
  size_t a = out.find("GET /a "), b = out.find("POST /b xyz"), c = out.find("GET /c ");
  ASSERT_NE(c, std::string::npos) << out;
  EXPECT_TRUE(a < b && b < c) << out;
  EXPECT_EQ(count(out, "HTTP/1.1 200 OK"), 3u) << out;
}

TEST(HttpConn, HeadAndBodyDeadlinesAnswer408) {
  Fixture f(quick(), echo);
  for (std::string partial : {"GET /slow HTTP/1.1\r\nX: ", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab"}) {
    int fd = dial(f.port);
    auto t0 = Clock::now();
    put(fd, partial);
    std::string out = drain(fd);
    close(fd);
    EXPECT_EQ(out.rfind("HTTP/1.1 408", 0), 0u) << out;
    EXPECT_LT(since(t0), 1.5);
  }
}

TEST(HttpConn, HeadCheckRefusesBeforeTheBody) {
  Fixture f(quick(), echo, [](const HttpRequest& head, HttpResponse& r) {
    if (head.path != "/locked") return false;
    r.status = 401;
    return true;
  });
  int fd = dial(f.port);
  put(fd, "POST /locked HTTP/1.1\r\nHost: x\r\nContent-Length: 4000\r\n\r\n");  // the body never comes
  auto t0 = Clock::now();
  std::string out = drain(fd);
  close(fd);
  EXPECT_EQ(out.rfind("HTTP/1.1 401", 0), 0u) << out;
  EXPECT_LT(since(t0), 1.0);  // well before the 0.4 s body deadline + linger would close it
}

TEST(HttpConn, StalledReaderFailsTheWriteAfterTheSendDeadline) {
  std::atomic<double> failed_after{-1};
  Fixture f(quick(), [&](const HttpRequest&, HttpResponse& r) {
    r.stream = [&](const BodyWriter& w) {
      std::string block(64 << 10, 'x');
      auto t0 = Clock::now();
      for (int i = 0; i < 2000; ++i) {  // 128 MiB at most
        if (!w(block)) {
          failed_after = since(t0);
          return;
        }
      }
    };
  });
  int fd = dial(f.port, 4096);
  put(fd, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");  // and never read
  for (int i = 0; i < 100 && failed_after < 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  close(fd);
  EXPECT_GE(failed_after.load(), 0.0) << "the write never failed";
  EXPECT_LT(failed_after.load(), 2.0);
}

// Issue 26 §2.4: the stall deadline is one of no progress. A client that keeps reading, slower than the
// producer writes, gets the whole body: POLLOUT waits for a third of the send buffer to drain (and the window
// reopens in bursts), which at this pace takes longer than the 0.5 s deadline; the kernel's queue for the
// peer shrinks more often.
TEST(HttpConn, SteadySlowReaderIsNotCutBySendDeadline) {
  HttpConnConfig cfg = quick();
  cfg.send_stall_s = 0.5;
  constexpr size_t kBlock = 16 << 10, kBlocks = 32;  // 512 KiB
  std::atomic<bool> write_failed{false};
  Fixture f(cfg, [&](const HttpRequest&, HttpResponse& r) {
    r.stream = [&](const BodyWriter& w) {
      std::string block(kBlock, 'x');
      for (size_t i = 0; i < kBlocks; ++i)
        if (!w(block)) {
          write_failed = true;
          return;
        }
    };
  });
  int fd = dial(f.port);
  put(fd, "GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  constexpr double kRate = 200e3;  // bytes per second, read 4 KiB at a time
  size_t got = 0;
  auto t0 = Clock::now();
  char buf[4096];
  while (since(t0) < 10) {
    double ahead = static_cast<double>(got) / kRate - since(t0);
    if (ahead > 0) std::this_thread::sleep_for(std::chrono::duration<double>(ahead));
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  EXPECT_FALSE(write_failed.load());
  EXPECT_GT(got, kBlock * kBlocks);  // the body and its chunk framing
}

TEST(HttpConn, StopClosesIdleAndSlowConnectionsByTheDeadline) {
  HttpConnConfig cfg = quick();
  cfg.header_timeout_s = 30;  // only stop() can end them
  cfg.body_timeout_s = 30;
  auto f = std::make_unique<Fixture>(cfg, echo);
  int idle = dial(f->port), slow = dial(f->port), body = dial(f->port);
  put(slow, "GET / HTTP/1.1\r\n");
  put(body, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto t0 = Clock::now();
  f->listener.stop(Clock::now() + std::chrono::milliseconds(300));
  EXPECT_LT(since(t0), 1.0);
  for (int fd : {idle, slow, body}) {
    EXPECT_EQ(drain(fd, 1), "");  // closed, nothing half-written
    close(fd);
  }
}

TEST(HttpConn, BytesHeldAcrossConnectionsAreBounded) {
  HttpConnConfig cfg = quick();
  cfg.limits.max_body_bytes = 16384;
  cfg.max_buffered_bytes = 40000;
  cfg.body_timeout_s = 5;
  Fixture f(cfg, echo);
  std::vector<int> fds;
  std::string refused;
  for (int i = 0; i < 6; ++i) {  // each holds ~16 KiB of a body that never completes
    int fd = dial(f.port);
    put(fd, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 16384\r\n\r\n" + std::string(12000, 'a'));
    fds.push_back(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  int n503 = 0;
  for (int fd : fds) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      std::string out = drain(fd, 1);
      n503 += out.rfind("HTTP/1.1 503", 0) == 0;
    }
  }
  EXPECT_GE(n503, 2);  // 6 x ~16 KiB cannot fit in 40000 bytes
  EXPECT_LE(n503, 5);  // but the first ones were kept
  for (int fd : fds) close(fd);
  // Once they are gone the budget is free again.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int fd = dial(f.port);
  put(fd, "POST /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 10000\r\n\r\n" + std::string(10000, 'b'));
  EXPECT_EQ(drain(fd).rfind("HTTP/1.1 200", 0), 0u);
  close(fd);
}

// Issue 26 §2.2: a fast route is answered by the reactor, so it needs no worker: with the only worker held
// by a stream, pipelined GET and HEAD requests to it are answered at once, in order.
TEST(HttpConn, FastRouteAnswersWhileEveryWorkerIsBusy) {
  HttpConnConfig cfg = quick();
  cfg.worker_threads = 1;
  std::atomic<bool> release{false};
  Fixture f(
      cfg,
      [&](const HttpRequest&, HttpResponse& r) {
        r.stream = [&](const BodyWriter& w) {
          while (!release) {
            if (!w("x")) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
        };
      },
      {},
      [](const HttpRequest& q, HttpResponse& r) {
        if (q.path != "/fast") return false;
        r.set_content("fast " + q.method, "text/plain");
        return true;
      });
  int hold = dial(f.port);
  put(hold, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the worker is in the stream now
  int fd = dial(f.port);
  auto t0 = Clock::now();
  put(fd, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\nHEAD /fast HTTP/1.1\r\nHost: x\r\n\r\n"
          "GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string out = drain(fd, 2);
  double took = since(t0);
  close(fd);
  release = true;
  close(hold);
  EXPECT_EQ(count(out, "HTTP/1.1 200 OK"), 3u) << out;
  EXPECT_EQ(count(out, "fast GET"), 2u) << out;  // HEAD: the head only, with its would-be Content-Length
  EXPECT_EQ(count(out, "Content-Length: 8\r\n"), 2u) << out;
  EXPECT_EQ(count(out, "fast HEAD"), 0u) << out;
  EXPECT_EQ(count(out, "Content-Length: 9\r\n"), 1u) << out;
  EXPECT_LT(took, 1.0);
}

// A fast answer to a client that never reads is flushed on EPOLLOUT, never by blocking the reactor: others
// are still served, and the non-reader is dropped after the send-stall deadline.
TEST(HttpConn, FastAnswerToANonReaderDoesNotBlockTheReactor) {
  Fixture f(quick(), echo, {}, [](const HttpRequest& q, HttpResponse& r) {
    if (q.path != "/big" && q.path != "/small") return false;
    r.set_content(q.path == "/big" ? std::string(8 << 20, 'b') : "small", "text/plain");
    return true;
  });
  int stuck = dial(f.port, 4096);
  put(stuck, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");  // and never read
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int fd = dial(f.port);
  auto t0 = Clock::now();
  put(fd, "GET /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string out = drain(fd, 2);
  EXPECT_LT(since(t0), 0.5);
  close(fd);
  EXPECT_NE(out.find("small"), std::string::npos) << out;
  // The non-reader's connection is closed once the deadline (0.3 s) passes: reading now ends in EOF/reset.
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  size_t got = 0;
  char buf[65536];
  for (;;) {
    pollfd p{stuck, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) break;
    ssize_t n = recv(stuck, buf, sizeof buf, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(stuck);
  EXPECT_LT(got, size_t{8} << 20);  // cut off: not the whole 8 MiB
}

// Issue 26 §1: a vanished client is detected without writing (peer_gone on a socket, and through the
// BodyWriter a streaming handler gets), and the --sse-keepalive comment's pacing (never before the first
// data event, never sooner than its period after the last write; periods under 15 s refused).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "server/http_conn.h"
#include "server/peer_probe.h"
#include "server/server_config.h"
#include "server/sse_keepalive.h"

using namespace tinfer::server;
using Clock = std::chrono::steady_clock;

namespace {

// A connected loopback TCP pair: client (ours to misbehave with) and server (what peer_gone is asked about).
struct Pair {
  int client = -1, server = -1;
  Pair() {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(l, 1), 0);
    getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
    client = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    server = accept(l, nullptr, nullptr);
    close(l);
  }
  ~Pair() {
    if (client >= 0) close(client);
    if (server >= 0) close(server);
  }
};

// Lets what the client did reach the server's socket (loopback: well under this).
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

}  // namespace

TEST(PeerProbe, OpenIdleClientIsThere) {
  Pair p;
  EXPECT_FALSE(peer_gone(p.server));
}

TEST(PeerProbe, PipelinedBytesAreNotGoneAndStayUnread) {
  Pair p;
  ASSERT_EQ(send(p.client, "GET / HTTP/1.1\r\n\r\n", 18, 0), 18);
  settle();
  EXPECT_FALSE(peer_gone(p.server));
  EXPECT_FALSE(peer_gone(p.server));
  char buf[32];
  EXPECT_EQ(recv(p.server, buf, sizeof buf, MSG_DONTWAIT), 18);  // the peek consumed nothing
}

TEST(PeerProbe, ClosedClientIsGone) {
  Pair p;
  close(p.client);
  p.client = -1;
  settle();
  EXPECT_TRUE(peer_gone(p.server));
}

TEST(PeerProbe, HalfClosedClientIsGone) {
  Pair p;
  shutdown(p.client, SHUT_WR);
  settle();
  EXPECT_TRUE(peer_gone(p.server));
}

TEST(PeerProbe, ResetClientIsGone) {
  Pair p;
  linger l{1, 0};  // close() sends RST
  setsockopt(p.client, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(p.client);
  p.client = -1;
  settle();
  EXPECT_TRUE(peer_gone(p.server));
}

// Through the HTTP layer: a streaming handler that writes nothing learns that its client left.
TEST(PeerProbe, StreamingHandlerSeesItsClientLeaveWithoutWriting) {
  std::atomic<double> seen_after{-1};
  std::atomic<bool> closed{false};
  HttpConnConfig cfg;
  cfg.worker_threads = 2;
  Clock::time_point t_close{};
  HttpListener listener(
      cfg,
      [&](const HttpRequest&, HttpResponse& r) {
        r.stream = [&](const BodyWriter& w) {
          for (int i = 0; i < 400; ++i) {  // 4 s at most
            EXPECT_FALSE(!closed && w.peer_gone());
            if (closed && w.peer_gone()) {
              seen_after = std::chrono::duration<double>(Clock::now() - t_close).count();
              return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
        };
      },
      [](int, const std::string&, HttpResponse&) {});
  const int port = listener.bind();
  listener.start();
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string req = "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(fd, req.data(), req.size(), 0), ssize_t(req.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the handler runs, probing
  t_close = Clock::now();
  closed = true;
  close(fd);
  for (int i = 0; i < 200 && seen_after < 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  listener.stop(Clock::now());
  EXPECT_GE(seen_after.load(), 0.0) << "the handler never saw its client leave";
  EXPECT_LT(seen_after.load(), 0.5);
}

TEST(SseKeepalive, OffNeverSendsAComment) {
  SseKeepalive k(0);
  const auto t0 = Clock::now();
  k.wrote(t0, true);
  EXPECT_FALSE(k.due(t0 + std::chrono::hours(1)));
}

TEST(SseKeepalive, NeverBeforeTheFirstDataEvent) {
  SseKeepalive k(15);
  const auto t0 = Clock::now();
  EXPECT_FALSE(k.due(t0 + std::chrono::hours(1)));  // a request queued an hour: still no comment
  k.wrote(t0, false);                               // bytes that were not a data event do not open it either
  EXPECT_FALSE(k.due(t0 + std::chrono::hours(1)));
}

TEST(SseKeepalive, SpacedByThePeriodAfterEveryWrite) {
  using std::chrono::milliseconds;
  SseKeepalive k(15);
  const auto t0 = Clock::now();
  k.wrote(t0, true);
  EXPECT_FALSE(k.due(t0 + milliseconds(14999)));
  EXPECT_TRUE(k.due(t0 + milliseconds(15000)));
  const auto t1 = t0 + milliseconds(15000);
  k.wrote(t1, false);  // the comment itself
  EXPECT_FALSE(k.due(t1 + milliseconds(14999)));
  EXPECT_TRUE(k.due(t1 + milliseconds(15000)));
  const auto t2 = t1 + milliseconds(3000);
  k.wrote(t2, true);  // data resets the wait
  EXPECT_FALSE(k.due(t2 + milliseconds(14999)));
}

TEST(SseKeepalive, PeriodsUnderFifteenSecondsAreRefused) {
  // (period, accepted)
  const std::pair<double, bool> cases[] = {{0, true}, {15, true}, {60, true}, {14.9, false}, {1, false}, {-1, false}};
  for (const auto& [period, accepted] : cases) {
    ServerConfig c;
    c.sse_keepalive_s = period;
    EXPECT_EQ(c.validate().empty(), accepted) << period;
  }
}

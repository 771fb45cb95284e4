// Reactor (epoll, level-triggered) + worker pool. A connection is owned by exactly one side at a
// time: the reactor while a request is being received (or a refused one lingers, or a fast route's
// answer is flushed), a worker while its request is handled and answered; ownership moves with the
// unique_ptr.
#include "server/http_conn.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/timer.h"
#include "tinfer/error.h"
#include "server/response_writer.h"

namespace tinfer::server {

using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kReadStep = 64 << 10;
constexpr int kReadStepsPerWake = 16;              // one busy client cannot monopolise the reactor
// Fast answers (/health, /metrics) per connection per reactor turn: a client pipelining thousands of probes
// gets a few, then waits its turn behind everyone else (the rest stay in its buffer; see `again`).
constexpr int kFastAnswersPerWake = 4;
constexpr auto kLinger = std::chrono::seconds(1);  // after a refusal: drain what the client still sends
// A slow reader's kernel reopens its full receive window in steps (silly-window avoidance wants a segment's
// worth free, RFC 1122 4.2.3.3, and its memory is freed a whole buffered packet at a time), and send_all
// sees progress only when it does. Loopback's segments are 64 KiB; capping ours makes the steps smaller
// (measured: a client reading 200 KB/s under a 0.5 s send deadline is cut with 64 KiB segments, not with
// 16 KiB; readers much slower than the client's receive buffer per deadline can still be cut on loopback).
// Real links' segments are ~1.4 KiB, below the cap.
constexpr int kMaxSegment = 16 << 10;

Clock::duration secs(double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); }

struct Conn {
  Conn(int f, const ParseLimits& l, Clock::time_point now) : fd(f), parser(l), opened(now) {}
  ~Conn() { ::close(fd); }
  int fd;
  std::string in;  // received, not yet parsed (pipelined bytes included)
  RequestParser parser;
  Clock::time_point opened;
  Clock::time_point idle_deadline, head_deadline, body_deadline;
  bool fresh = true;        // no request answered yet
  bool head_timed = false;  // head_deadline set for the current request
  bool body_timed = false;
  bool sent_continue = false;
  size_t accounted = 0;    // this connection's share of Impl::buffered
  bool lingering = false;  // refused: write side shut, discarding input until EOF or linger_deadline
  Clock::time_point linger_deadline;
  // A response the reactor answered itself (HttpFastRoute), being flushed without blocking: input is not
  // read meanwhile (so a client that pipelines and never reads holds one response, never more).
  std::string out;
  size_t out_sent = 0;
  bool keep_after_out = false;  // serve the next request once `out` is flushed, else linger
  bool deferred = false;        // pipelined requests wait in `in` for the next reactor turn (Impl::again)
  Clock::time_point out_deadline;  // the client took no byte of `out` since send_stall_s ago
  bool writing() const { return out_sent < out.size(); }
};

}  // namespace

struct HttpListener::Impl {
  HttpConnConfig cfg;
  HttpHandler handler;
  HttpErrorPage error_page;
  HttpHeadCheck head_check;
  HttpFastRoute fast_route;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  std::thread reactor;
  std::vector<std::thread> workers;
  std::atomic<int> open_conns{0};
  std::atomic<int64_t> buffered{0};  // request bytes held (reactor buffers + requests not yet handled)

  std::mutex mu;  // guards everything below
  std::condition_variable work_cv;
  std::deque<std::unique_ptr<Conn>> ready;      // reactor -> workers
  std::vector<std::unique_ptr<Conn>> returned;  // workers -> reactor
  int busy = 0;                                 // workers holding a connection
  bool stopping = false;
  Clock::time_point stop_deadline = Clock::time_point::max();
  bool running = false;

  ~Impl() {
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) ::close(fd);
  }

  void wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof one);
  }

  HttpResponse error_response(int status, const std::string& message) {
    HttpResponse r;
    r.status = status;
    error_page(status, message, r);
    return r;
  }

  // ---- reactor side ----

  std::unordered_map<int, std::unique_ptr<Conn>> conns;  // reactor-owned, by fd
  std::vector<int> again;  // connections whose buffered pipelined requests wait for the next turn (advance)
  bool stop_seen = false;                                // the reactor has begun stopping
  Clock::time_point accept_paused_until{};               // set while accept() lacks descriptors
  Clock::time_point stop_at = Clock::time_point::max();  // the reactor's copy of stop_deadline

  void watch(std::unique_ptr<Conn> c) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c->fd;
    if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
      open_conns--;
      return;  // ~Conn closes it
    }
    int fd = c->fd;
    conns.emplace(fd, std::move(c));
  }

  // Brings buffered up to date with what `c` holds now.
  void account(Conn& c) {
    size_t now = c.in.capacity() + c.parser.held_bytes();
    buffered += static_cast<int64_t>(now) - static_cast<int64_t>(c.accounted);
    c.accounted = now;
  }

  void drop(int fd) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    buffered -= static_cast<int64_t>(conns.at(fd)->accounted);
    conns.erase(fd);
    open_conns--;
  }

  // Best effort, never blocks: error responses are small and the socket's buffer is empty.
  void refuse(Conn& c, int status, const std::string& message) { refuse(c, error_response(status, message)); }
  void refuse(Conn& c, const HttpResponse& r) {
    std::string out = head_text(r, Framing::kLength, false) + r.body;
    [[maybe_unused]] ssize_t n = ::send(c.fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    linger(c);
  }

  // Closing with unread input makes the kernel send RST, which can destroy the response the client
  // has not read yet; so shut the write side and discard input for a while first.
  void linger(Conn& c) {
    ::shutdown(c.fd, SHUT_WR);
    c.lingering = true;
    c.in.clear();
    c.in.shrink_to_fit();
    c.parser = RequestParser(cfg.limits);
    c.linger_deadline = Clock::now() + kLinger;
    account(c);
  }

  Clock::time_point deadline_of(const Conn& c) const {
    Clock::time_point d;
    if (c.writing())
      d = c.out_deadline;
    else if (c.lingering)
      d = c.linger_deadline;
    else if (!c.parser.started())
      d = c.idle_deadline;
    else if (!c.parser.head_done())
      d = c.head_deadline;
    else
      d = c.body_deadline;
    return std::min(d, stop_at);
  }

  // Parses what is buffered; a complete request is answered here (fast route) or handed to the workers.
  // False: the conn left the reactor (to a worker, or dropped).
  bool advance(int fd) {
    for (int fast = 0;;) {
      Conn& c = *conns.at(fd);
      if (c.writing()) return true;  // the fast answer goes out first; the rest waits in c.in
      RequestParser::Status st = c.parser.parse(c.in);
      account(c);
      Clock::time_point now = Clock::now();
      if (c.parser.started() && !c.head_timed) {
        c.head_timed = true;
        c.head_deadline = (c.fresh ? c.opened : now) + secs(cfg.header_timeout_s);
      }
      if (st == RequestParser::Status::kError) {
        refuse(c, c.parser.error_status(), c.parser.error_message());
        return true;
      }
      if (c.parser.head_done() && !c.body_timed) {
        c.body_timed = true;
        c.body_deadline = now + secs(cfg.body_timeout_s);
        HttpResponse r;
        if (head_check && head_check(c.parser.head(), r)) {
          refuse(c, r);
          return true;
        }
      }
      if (st == RequestParser::Status::kDone) {
        switch (answer_fast(fd)) {
          case Fast::kNo:
            hand_over(fd);
            return false;
          case Fast::kGone:
            return false;
          case Fast::kAnswered:
            if (++fast < kFastAnswersPerWake) continue;  // a pipelined request may be buffered already
            c.deferred = true;  // the rest next turn, after the other connections' events; nothing read meanwhile
            again.push_back(fd);
            return true;
          case Fast::kPending:
            return true;
        }
      }
      if (c.parser.head_done() && c.parser.expects_continue() && !c.sent_continue) {
        // The head passed every limit (an oversized Content-Length was refused above): invite the body.
        c.sent_continue = true;
        static const char k100[] = "HTTP/1.1 100 Continue\r\n\r\n";
        [[maybe_unused]] ssize_t n = ::send(fd, k100, sizeof k100 - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      return true;
    }
  }

  void hand_over(int fd) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    std::unique_ptr<Conn> owned = std::move(conns.at(fd));
    conns.erase(fd);
    {
      std::lock_guard<std::mutex> lk(mu);
      ready.push_back(std::move(owned));
    }
    work_cv.notify_one();
  }

  // What answer_fast did: not a fast route's request (a worker's), answered and flushed with the connection
  // kept for the next request, answered with bytes still to flush (or lingering after it), or dropped.
  enum class Fast { kNo, kAnswered, kPending, kGone };

  // The fast route's answer, written from the reactor: never blocks, a slow reader's rest is flushed on
  // EPOLLOUT (on_writable) under the send-stall deadline.
  Fast answer_fast(int fd) {
    Conn& c = *conns.at(fd);
    if (!fast_route) return Fast::kNo;
    HttpResponse res;
    try {
      if (!fast_route(c.parser.head(), res)) return Fast::kNo;
    } catch (...) {
      return Fast::kNo;  // the worker's handler answers it instead
    }
    HttpRequest req = c.parser.take();
    account(c);
    const bool keep = req.keep_alive && !stop_seen;
    c.out = head_text(res, Framing::kLength, keep);
    if (req.method != "HEAD") c.out += res.body;
    c.out_sent = 0;
    c.keep_after_out = keep;
    c.out_deadline = Clock::now() + secs(cfg.send_stall_s);
    next_request(c);
    if (!flush(c)) {
      drop(fd);
      return Fast::kGone;
    }
    if (c.writing()) {
      interest(fd, EPOLLOUT);
      return Fast::kPending;
    }
    if (!keep) {
      linger(c);
      return Fast::kPending;
    }
    return Fast::kAnswered;
  }

  // Sends what the socket takes of c.out now; false when the peer is gone.
  bool flush(Conn& c) {
    while (c.writing()) {
      ssize_t n = ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.out_sent += static_cast<size_t>(n);
        c.out_deadline = Clock::now() + secs(cfg.send_stall_s);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    std::string().swap(c.out);
    c.out_sent = 0;
    return true;
  }

  // EPOLLOUT while a fast answer is being flushed.
  void on_writable(int fd) {
    Conn& c = *conns.at(fd);
    if (!flush(c)) {
      drop(fd);
      return;
    }
    if (c.writing()) return;
    interest(fd, EPOLLIN | EPOLLRDHUP);
    if (!c.keep_after_out || stop_seen) {
      linger(c);
      return;
    }
    advance(fd);
  }

  void interest(int fd, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &ev);
  }

  // After a response: the connection waits for its next request under the keep-alive deadline.
  void next_request(Conn& c) {
    c.fresh = false;
    c.head_timed = c.body_timed = c.sent_continue = false;
    c.idle_deadline = Clock::now() + secs(cfg.keep_alive_s);
  }

  void on_readable(int fd) {
    Conn& c = *conns.at(fd);
    char buf[kReadStep];
    for (int step = 0; step < kReadStepsPerWake && !c.deferred; ++step) {  // deferred: `in` is served first
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {  // EOF or error: nothing can be answered any more
        drop(fd);
        return;
      }
      if (c.lingering) continue;  // discarded
      c.in.append(buf, static_cast<size_t>(n));
      if (!advance(fd) || c.lingering || c.writing()) return;
      if (buffered.load() > static_cast<int64_t>(cfg.max_buffered_bytes)) {
        refuse(c, 503, "the server holds too many request bytes being received; retry later");
        return;
      }
    }
  }

  void accept_all() {
    for (;;) {
      int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: the pending connection stays in the backlog, and the level-triggered
          // listening socket would wake us at once forever; stop watching it for a moment.
          ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
          accept_paused_until = Clock::now() + std::chrono::milliseconds(100);
        }
        return;  // EAGAIN: all accepted
      }
      int yes = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);  // SSE chunks are small writes
      if (cfg.send_buffer_bytes > 0)
        ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &cfg.send_buffer_bytes, sizeof cfg.send_buffer_bytes);
      Clock::time_point now = Clock::now();
      auto c = std::make_unique<Conn>(fd, cfg.limits, now);
      c->idle_deadline = now + secs(cfg.header_timeout_s);
      if (open_conns.load() >= cfg.max_connections) evict_one();
      if (open_conns.fetch_add(1) >= cfg.max_connections) {
        HttpResponse r = error_response(503, "too many open connections");
        std::string out = head_text(r, Framing::kLength, false) + r.body;
        [[maybe_unused]] ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        open_conns--;
        continue;  // ~Conn closes
      }
      watch(std::move(c));
    }
  }

  // At the connection cap, a new client takes the place of one that has not even sent a whole
  // request head: a lingering one, else an idle one, else the oldest partial head. So a flood of
  // idle or slow-header connections cannot lock out others; requests being handled are never touched.
  void evict_one() {
    int victim = -1, rank = 3;
    Clock::time_point oldest = Clock::time_point::max();
    for (auto& [fd, c] : conns) {
      int r = c->writing() ? 3 : c->lingering ? 0 : !c->parser.started() ? 1 : !c->parser.head_done() ? 2 : 3;
      Clock::time_point t = r == 2 ? c->head_deadline : c->opened;
      if (r < rank || (r == rank && r < 3 && t < oldest)) {
        victim = fd;
        rank = r;
        oldest = t;
      }
    }
    if (victim >= 0) drop(victim);
  }

  void take_returned() {
    std::vector<std::unique_ptr<Conn>> back;
    {
      std::lock_guard<std::mutex> lk(mu);
      back.swap(returned);
    }
    for (auto& c : back) {
      int fd = c->fd;
      bool lingering = c->lingering;
      bool idle_stop = stopping && !lingering;
      watch(std::move(c));
      if (!conns.count(fd)) continue;
      if (idle_stop) {  // no keep-alive while stopping: the worker already said "Connection: close"
        linger(*conns.at(fd));
        continue;
      }
      if (!lingering) advance(fd);  // pipelined requests may be buffered already
    }
  }

  void begin_stop_locked_out() {
    if (listen_fd >= 0) {
      ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
      ::close(listen_fd);
      listen_fd = -1;
    }
    std::vector<int> idle;
    for (auto& [fd, c] : conns)
      if (!c->lingering && !c->parser.started() && !c->writing()) idle.push_back(fd);
    for (int fd : idle) drop(fd);
  }

  void reactor_loop() {
    epoll_event evs[64];
    for (;;) {
      bool stop_now;
      {
        std::lock_guard<std::mutex> lk(mu);
        stop_now = stopping;
        stop_at = stop_deadline;
      }
      if (stop_now && !stop_seen) {
        stop_seen = true;
        begin_stop_locked_out();
      }
      Clock::time_point now = Clock::now();
      if (accept_paused_until != Clock::time_point{} && now >= accept_paused_until && listen_fd >= 0) {
        accept_paused_until = {};
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = listen_fd;
        ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
      }
      // Deadlines: idle and lingering connections close quietly; a partial request gets 408.
      std::vector<int> expired;
      Clock::time_point next = now + std::chrono::seconds(1);
      if (accept_paused_until != Clock::time_point{}) next = std::min(next, accept_paused_until);
      for (auto& [fd, c] : conns) {
        Clock::time_point d = deadline_of(*c);
        if (d <= now)
          expired.push_back(fd);
        else
          next = std::min(next, d);
      }
      for (int fd : expired) {
        Conn& c = *conns.at(fd);
        bool partial = !c.lingering && !c.writing() && c.parser.started();
        if (partial && !(stop_seen && now >= stop_at)) {
          refuse(c, 408,
                 c.parser.head_done()
                     ? "request body not received within " + seconds_text(cfg.body_timeout_s)
                     : "request head not received within " + seconds_text(cfg.header_timeout_s));
        } else {
          drop(fd);
        }
      }
      if (stop_seen) {
        std::lock_guard<std::mutex> lk(mu);
        if (conns.empty() && busy == 0 && ready.empty() && returned.empty()) return;
      }
      int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count()) + 1;
      int n = ::epoll_wait(epoll_fd, evs, 64, again.empty() ? std::max(ms, 1) : 0);
      std::vector<int> revisit;
      revisit.swap(again);
      for (int i = 0; i < n; ++i) {
        int fd = evs[i].data.fd;
        if (fd == listen_fd) {
          accept_all();
        } else if (fd == wake_fd) {
          uint64_t v;
          [[maybe_unused]] ssize_t r = ::read(wake_fd, &v, sizeof v);
        } else if (conns.count(fd)) {
          if (conns.at(fd)->writing())
            on_writable(fd);
          else
            on_readable(fd);
        }
      }
      for (int fd : revisit) {  // connections with pipelined requests left over from the last turn
        auto it = conns.find(fd);
        if (it == conns.end() || !it->second->deferred) continue;
        it->second->deferred = false;
        if (!it->second->writing() && !it->second->lingering) advance(fd);
      }
      take_returned();
    }
  }

  // ---- worker side ----

  void worker_loop() {
    for (;;) {
      std::unique_ptr<Conn> c;
      {
        std::unique_lock<std::mutex> lk(mu);
        work_cv.wait(lk, [&] { return !ready.empty() || (stopping && !running); });
        if (ready.empty()) return;
        c = std::move(ready.front());
        ready.pop_front();
        ++busy;
      }
      bool keep = serve(*c);                     // releases the request's bytes once the handler has them
      if (c->in.empty()) c->in.shrink_to_fit();  // an idle keep-alive connection keeps no large buffer
      next_request(*c);
      if (!keep) {
        ::shutdown(c->fd, SHUT_WR);
        c->lingering = true;
        c->linger_deadline = Clock::now() + kLinger;
      }
      {
        std::lock_guard<std::mutex> lk(mu);
        returned.push_back(std::move(c));
        --busy;
      }
      wake();
    }
  }

  // Runs the handler and writes the response; true when the connection may serve another request.
  bool serve(Conn& c) {
    HttpRequest req = c.parser.take();
    HttpResponse res;
    try {
      handler(req, res);
      // The handler has taken what it needs: a long stream must not keep the request body.
      std::string().swap(req.body);
      buffered -= static_cast<int64_t>(c.accounted);
      c.accounted = 0;
    } catch (...) {
      buffered -= static_cast<int64_t>(c.accounted);
      c.accounted = 0;
      res = HttpResponse{};
      res.status = 500;
      res.set_content(
          "{\"error\":{\"message\":\"internal error\",\"type\":\"server_error\",\"param\":null,\"code\":null}}",
          "application/json");
    }
    bool keep = req.keep_alive;
    {
      std::lock_guard<std::mutex> lk(mu);
      keep = keep && !stopping;
    }
    return write_response(c.fd, req, res, keep, secs(cfg.send_stall_s));
  }
};

HttpListener::HttpListener(HttpConnConfig config, HttpHandler handler, HttpErrorPage error_page,
                           HttpHeadCheck head_check, HttpFastRoute fast_route)
    : impl_(std::make_unique<Impl>()) {
  impl_->head_check = std::move(head_check);
  impl_->fast_route = std::move(fast_route);
  impl_->cfg = std::move(config);
  impl_->handler = std::move(handler);
  impl_->error_page = std::move(error_page);
}

HttpListener::~HttpListener() { stop(Clock::now()); }

int HttpListener::bind() {
  Impl& s = *impl_;
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  std::string port = std::to_string(s.cfg.port);
  const std::string where = s.cfg.host + ":" + (s.cfg.port ? port : std::string("<any>"));
  if (::getaddrinfo(s.cfg.host.c_str(), port.c_str(), &hints, &res) != 0 || !res)
    fail("cannot bind " + where + " (unknown host)");
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR allows a quick restart after TIME_WAIT; no SO_REUSEPORT, so a second server
    // cannot bind the same port and silently share its connections.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    // Accepted connections send at most kMaxSegment per TCP segment (the SYN-ACK advertises it), so a
    // slow reader's receive window reopens, and send_all sees progress, every kMaxSegment it reads.
    ::setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &kMaxSegment, sizeof kMaxSegment);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) break;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  check(fd >= 0, "cannot bind " + where + " (in use?)");
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  s.listen_fd = fd;
  return ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

void HttpListener::start() {
  Impl& s = *impl_;
  check(s.listen_fd >= 0, "HttpListener::start before bind");
  s.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  s.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  check(s.epoll_fd >= 0 && s.wake_fd >= 0, "cannot create epoll/eventfd");
  for (int fd : {s.listen_fd, s.wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  s.running = true;
  for (int i = 0; i < s.cfg.worker_threads; ++i) s.workers.emplace_back([&s] { s.worker_loop(); });
  s.reactor = std::thread([&s] { s.reactor_loop(); });
}

void HttpListener::stop(Clock::time_point deadline) {
  Impl& s = *impl_;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    if (!s.running) return;
    s.stopping = true;
    s.stop_deadline = std::min(s.stop_deadline, deadline);
  }
  s.wake();
  if (s.reactor.joinable()) s.reactor.join();  // returns once no connection is left anywhere
  {
    std::lock_guard<std::mutex> lk(s.mu);
    s.running = false;
  }
  s.work_cv.notify_all();
  for (auto& t : s.workers)
    if (t.joinable()) t.join();
  s.workers.clear();
}

}  // namespace tinfer::server

// HTTP/1.1 client: non-blocking connect and poll()-bounded reads, so no call outlives its deadline.
#include "bench/http_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tinfer/error.h"
#include "core/timer.h"

namespace tinfer::cli {

namespace {

int ms_left(double deadline) {
  const double left = deadline - now_s();
  return left <= 0 ? 0 : int(std::min(left * 1000.0 + 1, 2e9));
}

// Waits for `events` on fd; throws kTimeout when the deadline passes first.
void wait_for(int fd, short events, double deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ms = ms_left(deadline);
    if (ms == 0) throw HttpFailure(HttpFailure::kTimeout, std::string("timed out ") + what);
    const int r = ::poll(&p, 1, ms);
    if (r > 0) return;
    if (r < 0 && errno != EINTR)
      throw HttpFailure(HttpFailure::kConnection, std::string("poll: ") + std::strerror(errno));
  }
}

int connect_to(const HttpUrl& url, double deadline) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const std::string port = std::to_string(url.port);
  if (int e = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &res); e != 0)
    throw HttpFailure(HttpFailure::kConnection, "cannot resolve " + url.host + ": " + gai_strerror(e));
  std::string err = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int r = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (r < 0 && errno == EINPROGRESS) {
      try {
        wait_for(fd, POLLOUT, deadline, "connecting");
      } catch (...) {
        ::close(fd);
        ::freeaddrinfo(res);
        throw;
      }
      int so = 0;
      socklen_t len = sizeof so;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len);
      r = so == 0 ? 0 : -1;
      errno = so;
    }
    if (r == 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::freeaddrinfo(res);
      return fd;
    }
    err = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(res);
  throw HttpFailure(HttpFailure::kConnection, "cannot connect to " + url.host + ":" + port + ": " + err);
}

void send_all(int fd, const std::string& data, double deadline) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += size_t(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_for(fd, POLLOUT, deadline, "sending the request");
    } else if (n < 0 && errno != EINTR) {
      throw HttpFailure(HttpFailure::kConnection, std::string("send: ") + std::strerror(errno));
    }
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

HttpUrl parse_http_url(const std::string& url) {
  const std::string scheme = "http://";
  check(url.rfind(scheme, 0) == 0, "--url must start with http:// (https is not supported), got '" + url + "'");
  std::string rest = url.substr(scheme.size());
  HttpUrl u;
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) u.path = rest.substr(slash), rest = rest.substr(0, slash);
  while (!u.path.empty() && u.path.back() == '/') u.path.pop_back();
  const size_t colon = rest.rfind(':');
  u.host = rest;
  if (colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    u.host = rest.substr(0, colon);
    char* end = nullptr;
    const long p = std::strtol(rest.c_str() + colon + 1, &end, 10);
    check(end && *end == 0 && p > 0 && p < 65536, "bad port in --url '" + url + "'");
    u.port = int(p);
  }
  if (u.host.size() > 2 && u.host.front() == '[' && u.host.back() == ']') u.host = u.host.substr(1, u.host.size() - 2);
  check(!u.host.empty(), "no host in --url '" + url + "'");
  return u;
}

HttpResponse::HttpResponse(const HttpUrl& url, const std::string& method, const std::string& path,
                           const std::string& body, const std::map<std::string, std::string>& headers, double deadline)
    : fd_(connect_to(url, deadline)) {
  try {
    send_request_and_read_head(url, method, path, body, headers, deadline);
  } catch (...) {
    ::close(fd_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

void HttpResponse::send_request_and_read_head(const HttpUrl& url, const std::string& method, const std::string& path,
                                              const std::string& body,
                                              const std::map<std::string, std::string>& headers, double deadline) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: " + url.host + ":" + std::to_string(url.port) +
                    "\r\nConnection: close\r\nAccept: */*\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  send_all(fd_, req, deadline);

  const std::string status_line = read_line(deadline);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12)
    throw HttpFailure(HttpFailure::kConnection, "bad status line '" + status_line.substr(0, 80) + "'");
  status_ = std::atoi(status_line.c_str() + 9);
  bool chunked = false, has_length = false;
  for (;;) {
    const std::string h = read_line(deadline);
    if (h.empty()) break;
    const size_t colon = h.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = lower(h.substr(0, colon));
    std::string value = h.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (name == "transfer-encoding" && lower(value).find("chunked") != std::string::npos) chunked = true;
    if (name == "content-length") has_length = true, remaining_ = std::atoll(value.c_str());
  }
  framing_ = chunked ? Framing::kChunked : has_length ? Framing::kLength : Framing::kClose;
  if (framing_ == Framing::kChunked) remaining_ = 0;
  if (method == "HEAD" || status_ == 204 || status_ == 304 || (framing_ == Framing::kLength && remaining_ == 0))
    body_done_ = true;
}

HttpResponse::~HttpResponse() {
  if (fd_ >= 0) ::close(fd_);
}

bool HttpResponse::fill(double deadline) {
  char tmp[16384];
  for (;;) {
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n > 0) {
      buf_.append(tmp, size_t(n));
      return true;
    }
    if (n == 0) return false;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      wait_for(fd_, POLLIN, deadline, "waiting for the response");
    else if (errno != EINTR)
      throw HttpFailure(HttpFailure::kConnection, std::string("recv: ") + std::strerror(errno));
  }
}

std::string HttpResponse::read_line(double deadline) {
  size_t nl;
  while ((nl = buf_.find('\n')) == std::string::npos) {
    if (buf_.size() > 65536) throw HttpFailure(HttpFailure::kConnection, "line longer than 64 KiB");
    if (!fill(deadline)) throw HttpFailure(HttpFailure::kConnection, "connection closed by the server");
  }
  std::string line = buf_.substr(0, nl);
  buf_.erase(0, nl + 1);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

bool HttpResponse::body_bytes(std::string& out, double deadline) {
  if (body_done_) return false;
  if (framing_ == Framing::kChunked && remaining_ == 0) {
    const std::string size_line = read_line(deadline);
    char* end = nullptr;
    remaining_ = std::strtoll(size_line.c_str(), &end, 16);
    if (end == size_line.c_str() || remaining_ < 0)
      throw HttpFailure(HttpFailure::kConnection, "bad chunk size '" + size_line.substr(0, 40) + "'");
    if (remaining_ == 0) {  // last chunk: skip trailers up to the blank line
      while (!read_line(deadline).empty()) {
      }
      body_done_ = true;
      return false;
    }
  }
  if (buf_.empty() && !fill(deadline)) {
    if (framing_ == Framing::kClose) {
      body_done_ = true;
      return false;
    }
    throw HttpFailure(HttpFailure::kConnection, "connection closed by the server mid-body");
  }
  size_t take = buf_.size();
  if (framing_ != Framing::kClose) take = size_t(std::min<long long>(remaining_, (long long)take));
  out.append(buf_, 0, take);
  buf_.erase(0, take);
  remaining_ -= (long long)take;
  if (framing_ == Framing::kLength && remaining_ == 0) body_done_ = true;
  if (framing_ == Framing::kChunked && remaining_ == 0) {
    if (read_line(deadline).size() != 0) throw HttpFailure(HttpFailure::kConnection, "chunk not followed by CRLF");
  }
  return true;
}

bool HttpResponse::next_sse_data(std::string& payload, double deadline) {
  for (;;) {
    size_t nl;
    while ((nl = sse_.find('\n')) != std::string::npos) {
      std::string line = sse_.substr(0, nl);
      sse_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("data:", 0) != 0) continue;  // blank separators, comments (--sse-keepalive), other fields
      payload = line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
      return true;
    }
    if (!body_bytes(sse_, deadline)) {
      if (sse_.find_first_not_of(" \r\n") != std::string::npos)
        throw HttpFailure(HttpFailure::kConnection, "stream ended inside an event");
      return false;
    }
  }
}

std::string HttpResponse::read_body(double deadline, size_t limit) {
  std::string out;
  while (body_bytes(out, deadline))
    if (out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace tinfer::cli

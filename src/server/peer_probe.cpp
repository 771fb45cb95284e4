// See peer_probe.h. Runs on the worker that owns the connection while its response is written: the reactor has
// stopped watching the socket then (a connection belongs to one side at a time, http_conn.cpp), and a poll with
// a zero timeout costs one system call per probe period, with no state shared between the threads.
#include "server/peer_probe.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace tinfer::server {

bool peer_gone(int fd) {
  pollfd p{fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
  int r;
  do r = ::poll(&p, 1, 0);
  while (r < 0 && errno == EINTR);
  if (r <= 0) return false;
  // POLLRDHUP: the peer shut its sending side, even with bytes still unread before the FIN (a pipelined byte or
  // request sent just before leaving would otherwise hide the close from the peek below).
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL | POLLRDHUP)) return true;
  char byte;
  ssize_t n;
  do n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n > 0) return false;  // pipelined bytes: the client is there (they are read after this response)
  if (n == 0) return true;  // end of stream
  return errno != EAGAIN && errno != EWOULDBLOCK;  // ECONNRESET and the like
}

}  // namespace tinfer::server

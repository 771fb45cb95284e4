// Has the client of a connection gone away? Answered without writing a byte, so that a response with nothing
// to say yet (a stream waiting in the queue for its first token, a whole JSON body being generated) need not
// send filler (an SSE comment, a leading space) just to learn from a failed write that nobody is listening;
// some clients mis-parse such filler (vLLM's `bench serve` loses every later event after a leading comment).
#pragma once

namespace tinfer::server {

// Polls `fd` once without waiting (POLLIN | POLLRDHUP) and peeks one byte:
//   hang-up, error or FIN (POLLHUP, POLLERR, POLLRDHUP: reset, closed, half-closed) -> gone, even with unread
//                                                                    bytes before the FIN
//   readable, peek reads 0 bytes (FIN)                             -> gone
//   readable, peek reads >= 1 byte, no FIN (a pipelined request)   -> not gone (the bytes stay for the next request)
//   nothing to report, or the poll itself failed                   -> not gone (a write will decide)
// A response found gone ends without its terminating chunk (response_writer.cpp), so it never reads as complete.
// A half-closed client (shutdown(SHUT_WR), still reading) counts as gone, as uvicorn and nginx treat it.
// A peer that vanished without FIN or RST (cable cut) is not seen here; a write's send deadline still is.
bool peer_gone(int fd);

}  // namespace tinfer::server

// libFuzzer target for the HTTP request parser: the input is split at a position taken from its
// first byte and fed in two pieces (then re-fed after take() for pipelined requests). Checks that
// every limit holds whatever the bytes: no body or head larger than its limit is ever produced.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/request_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  tinfer::server::ParseLimits limits;
  limits.max_header_bytes = 1024;
  limits.max_headers = 16;
  limits.max_body_bytes = 2048;
  tinfer::server::RequestParser p(limits);
  const std::string wire(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t cut = wire.empty() ? 0 : data[0] % (wire.size() + 1);
  std::string buf;
  for (const std::string& piece : {wire.substr(0, cut), wire.substr(cut)}) {
    buf += piece;
    for (int i = 0; i < 64; ++i) {
      auto st = p.parse(buf);
      if (st == tinfer::server::RequestParser::Status::kError) {
        int s = p.error_status();
        if (s < 400 || s > 505) std::abort();
        return 0;
      }
      if (st != tinfer::server::RequestParser::Status::kDone) break;
      tinfer::server::HttpRequest r = p.take();
      if (r.body.size() > limits.max_body_bytes || r.headers.size() > limits.max_headers) std::abort();
    }
  }
  return 0;
}

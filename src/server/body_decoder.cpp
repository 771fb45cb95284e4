// zlib streaming inflate in fixed 64 KiB steps, checking the running output size after each step.
#include "server/body_decoder.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>

namespace tinfer::server {

BodyCoding body_coding(std::string_view ce) {
  std::string v;
  for (char c : ce) v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v.empty() || v == "identity") return BodyCoding::kIdentity;
  if (v == "gzip" || v == "x-gzip") return BodyCoding::kGzip;
  if (v == "deflate") return BodyCoding::kDeflate;
  return BodyCoding::kUnsupported;
}

DecodeResult inflate_bounded(std::string_view in, BodyCoding coding, size_t max_out, std::string& out) {
  out.clear();
  if (coding == BodyCoding::kIdentity) {
    if (in.size() > max_out) return DecodeResult::kTooLarge;
    out.assign(in);
    return DecodeResult::kOk;
  }
  if (coding == BodyCoding::kUnsupported) return DecodeResult::kCorrupt;
  z_stream zs{};
  // 16 + MAX_WBITS: gzip wrapper only; MAX_WBITS: zlib wrapper (what HTTP calls "deflate").
  if (inflateInit2(&zs, coding == BodyCoding::kGzip ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK)
    return DecodeResult::kCorrupt;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());  // callers cap bodies far below 4 GiB
  char buf[1 << 16];
  DecodeResult r = DecodeResult::kCorrupt;
  for (;;) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    int z = inflate(&zs, Z_NO_FLUSH);
    size_t got = sizeof buf - zs.avail_out;
    if (out.size() + got > max_out) {
      r = DecodeResult::kTooLarge;
      break;
    }
    out.append(buf, got);
    if (z == Z_STREAM_END) {
      // Trailing bytes after the stream (e.g. a second gzip member) are not accepted silently.
      r = zs.avail_in == 0 ? DecodeResult::kOk : DecodeResult::kCorrupt;
      break;
    }
    if (z != Z_OK || (got == 0 && zs.avail_in == 0)) break;  // broken or truncated input
  }
  inflateEnd(&zs);
  if (r != DecodeResult::kOk) out.clear();
  return r;
}

}  // namespace tinfer::server

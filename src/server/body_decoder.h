// Content-Encoding of request bodies: gzip and deflate are inflated with a cap on the *decoded*
// size, so a small compressed body cannot expand into unbounded memory (a "zip bomb").
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace tinfer::server {

enum class BodyCoding { kIdentity, kGzip, kDeflate, kUnsupported };

// "", "identity" -> kIdentity; "gzip"/"x-gzip" -> kGzip; "deflate" -> kDeflate; else kUnsupported.
BodyCoding body_coding(std::string_view content_encoding);

enum class DecodeResult { kOk, kTooLarge, kCorrupt };

// Inflates `in` into `out`; stops with kTooLarge as soon as the output would exceed `max_out`
// (no more than max_out bytes plus one inflate step are ever held).
DecodeResult inflate_bounded(std::string_view in, BodyCoding coding, size_t max_out, std::string& out);

}  // namespace tinfer::server

// Settings of the HTTP front end (the engine's own settings live in EngineConfig). Validated once by
// validate(); immutable afterwards.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tinfer::server {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;                   // 0 = any free port (the chosen one is printed)
  std::string api_key;               // non-empty: every /v1/* route needs "Authorization: Bearer KEY"
  std::string served_model_name;     // the model id clients see; "" = the model file's name
  int max_queued_requests = 256;     // accepted but not yet producing tokens; beyond: 429
  // Threads that parse, template and tokenize requests (0: one per core); a request that finds them all busy waits
  // up to preprocess_wait_s, then 429 (server/preprocess_pool.h).
  int max_preprocessing = 0;
  double preprocess_wait_s = 10;
  int64_t max_body_bytes = 1 << 20;  // larger bodies: 413
  int http_threads = 512;            // one per concurrent connection (streams hold their thread)
  double shutdown_grace_s = 5.0;     // on SIGTERM: in-flight requests get this long, then abort
  int peer_probe_ms = 500;           // how often a response being produced checks, writing nothing, for a vanished client
  double sse_keepalive_s = 0;        // streams: an SSE comment after this long without a write (0 = off; else 15-86400)
  int keep_alive_s = 2;              // idle keep-alive connections are closed after this
  // A non-streamed response may hold at most this many token entries: choices x max_tokens x
  // (1 + top_logprobs). ~60 bytes of JSON each, so the default bounds a response near 16 MB.
  int64_t max_response_entries = int64_t{1} << 18;
  // A stream's bytes produced but not yet taken by its client: beyond this (one stream), or beyond
  // max_streams_backlog_bytes (all streams together, for the stream that holds more than 1 MiB), the client reads
  // slower than the engine writes and the stream is cut, so a slow reader holds neither memory nor a worker for
  // long. 16 MiB is about the largest whole response (max_response_entries x ~60 bytes).
  int64_t max_stream_backlog_bytes = int64_t{16} << 20;
  int64_t max_streams_backlog_bytes = int64_t{256} << 20;
  // Hostile-client bounds. Memory held for requests being received is at most
  // max_connections * (max_header_bytes + max_body_bytes + 64 KiB).
  int max_connections = 1024;           // open connections; beyond: evict one mid-head, else 503
  int64_t max_header_bytes = 32 << 10;  // request line + headers; beyond: 431
  int max_headers = 100;                // header fields; beyond: 431
  double header_timeout_s = 10;         // whole request head must arrive within this; else 408
  double body_timeout_s = 30;           // whole body must arrive within this after the head; else 408
  double send_stall_s = 2;              // a client that takes less than 1 KiB of the response this long is dropped
  // Structured output: compiled grammars kept for reuse (bytes), and the tool-call format ("" = from the template).
  int64_t grammar_cache_bytes = int64_t{512} << 20;
  std::string tool_call_parser;

  std::vector<std::string> validate() const;
};

}  // namespace tinfer::server

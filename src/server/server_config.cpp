// ServerConfig::validate: every invalid setting, one message each.
#include "server/server_config.h"

#include <utility>

#include "server/sse_keepalive.h"

namespace tinfer::server {

// Durations beyond a day are refused: converted to clock ticks, 1e30 s or inf would overflow (undefined behaviour),
// and no deadline here means anything at that length.
constexpr double kMaxSeconds = 86400;

std::vector<std::string> ServerConfig::validate() const {
  // (setting out of range, the message that says so), in the order they are reported.
  const std::pair<bool, const char*> rules[] = {
      {host.empty(), "--host must not be empty"},
      {port < 0 || port > 65535, "--port must be in [0, 65535]"},
      {max_queued_requests < 1, "--max-queued-requests must be >= 1"},
      {max_preprocessing < 0, "--max-preprocessing must be >= 0"},
      {!(preprocess_wait_s >= 0 && preprocess_wait_s <= kMaxSeconds), "--preprocess-wait must be in [0, 86400]"},
      {max_body_bytes < 1024, "--max-body-bytes must be >= 1024"},
      {http_threads < 8, "--http-threads must be >= 8"},
      {!(shutdown_grace_s >= 0 && shutdown_grace_s <= kMaxSeconds), "--shutdown-grace must be in [0, 86400]"},
      {peer_probe_ms < 10, "peer_probe_ms must be >= 10"},
      {!(sse_keepalive_s == 0 || (sse_keepalive_s >= kMinSseKeepaliveS && sse_keepalive_s <= kMaxSeconds)),
       "--sse-keepalive must be 0 (off) or in [15, 86400] seconds"},
      {max_response_entries < 1, "--max-response-entries must be >= 1"},
      {max_stream_backlog_bytes < 65536, "--max-stream-backlog must be >= 64K"},
      {max_streams_backlog_bytes < max_stream_backlog_bytes, "max_streams_backlog_bytes must be >= --max-stream-backlog"},
      {grammar_cache_bytes < 0, "--grammar-cache-mb must be >= 0"},
      {keep_alive_s < 1, "keep_alive_s must be >= 1"},
      {max_connections < 16, "--max-connections must be >= 16"},
      {max_header_bytes < 1024, "max_header_bytes must be >= 1024"},
      {max_headers < 8, "max_headers must be >= 8"},
      {!(header_timeout_s > 0 && header_timeout_s <= kMaxSeconds), "--header-timeout must be in (0, 86400]"},
      {!(body_timeout_s > 0 && body_timeout_s <= kMaxSeconds), "--body-timeout must be in (0, 86400]"},
      {!(send_stall_s > 0 && send_stall_s <= kMaxSeconds), "--send-timeout must be in (0, 86400]"},
  };
  std::vector<std::string> p;
  for (const auto& [out_of_range, message] : rules)
    if (out_of_range) p.push_back(message);
  return p;
}

}  // namespace tinfer::server

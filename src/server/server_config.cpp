// ServerConfig::validate: every invalid setting, one message each.
#include "server/server_config.h"

namespace tinfer::server {

std::vector<std::string> ServerConfig::validate() const {
  std::vector<std::string> p;
  if (host.empty()) p.push_back("--host must not be empty");
  if (port < 0 || port > 65535) p.push_back("--port must be in [0, 65535]");
  if (max_queued_requests < 1) p.push_back("--max-queued-requests must be >= 1");
  if (max_body_bytes < 1024) p.push_back("--max-body-bytes must be >= 1024");
  if (http_threads < 8) p.push_back("--http-threads must be >= 8");
  if (shutdown_grace_s < 0) p.push_back("--shutdown-grace must be >= 0");
  if (heartbeat_ms < 10) p.push_back("heartbeat_ms must be >= 10");
  if (max_response_entries < 1) p.push_back("--max-response-entries must be >= 1");
  if (keep_alive_s < 1) p.push_back("keep_alive_s must be >= 1");
  if (max_connections < 16) p.push_back("--max-connections must be >= 16");
  if (max_header_bytes < 1024) p.push_back("max_header_bytes must be >= 1024");
  if (max_headers < 8) p.push_back("max_headers must be >= 8");
  if (!(header_timeout_s > 0)) p.push_back("--header-timeout must be > 0");
  if (!(body_timeout_s > 0)) p.push_back("--body-timeout must be > 0");
  if (!(send_stall_s > 0)) p.push_back("--send-timeout must be > 0");
  return p;
}

}  // namespace tinfer::server

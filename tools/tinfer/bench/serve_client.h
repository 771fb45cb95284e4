// One streamed request of `tinfer bench serve`: POSTs a JSON body to an OpenAI-compatible endpoint and
// records when each output chunk arrived and the usage the server reported, or how the request failed.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/http_client.h"

namespace tinfer::cli {

struct ServeTarget {
  HttpUrl url;
  std::string path;                            // e.g. "/v1/completions" (url.path prepended by the caller)
  std::map<std::string, std::string> headers;  // Content-Type, Authorization
  double timeout_s = 120;                      // per request, connect to last byte
};

struct RequestResult {
  bool ok = false;
  std::string error;   // when !ok: "http NNN", "connection", "timeout" or "stream error"
  std::string detail;  // the first bytes of an error body or the failure's message
  double start = 0, end = 0;
  std::vector<double> chunk_times;                     // arrival of every chunk carrying output text
  int64_t prompt_tokens = -1, completion_tokens = -1;  // from the usage chunk; -1 when none came
};

// Never throws for anything the server does; every read is bounded by start + timeout_s.
RequestResult run_request(const ServeTarget& target, const std::string& body);

}  // namespace tinfer::cli

// OpenAI response JSON: whole responses, SSE stream chunks, usage and the two logprobs formats
// (completions: parallel arrays; chat: content[] entries with bytes).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/sample_output.h"

namespace tinfer::server {

struct ResponseMeta {
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  bool chat = false;
  bool logprobs = false;
};

struct Usage {
  int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

nlohmann::json usage_json(const Usage& u);
nlohmann::json logprobs_json(bool chat, const std::vector<TokenRecord>& records);
nlohmann::json full_response(const ResponseMeta& m, const std::vector<SampleOutput>& samples, const Usage& u,
                             const std::vector<std::string>& warnings);
// One streamed delta for choice `index`. `first` adds the chat role; finish_reason "" = null.
nlohmann::json stream_chunk(const ResponseMeta& m, int index, const std::string& text,
                            const std::vector<TokenRecord>* records, const std::string& finish_reason, bool first);
nlohmann::json usage_chunk(const ResponseMeta& m, const Usage& u);

// JSON text that never throws on invalid UTF-8 (replaced by U+FFFD).
std::string dump(const nlohmann::json& j);
// "data: {...}\n\n"
std::string sse(const nlohmann::json& j);

}  // namespace tinfer::server

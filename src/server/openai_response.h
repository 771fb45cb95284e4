// OpenAI response JSON: whole responses, SSE stream chunks, usage and the two logprobs formats
// (completions: parallel arrays; chat: content[] entries with bytes).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/choice_shaper.h"
#include "server/sample_output.h"

namespace tinfer::server {

struct ResponseMeta {
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  bool chat = false;
  bool logprobs = false;
  nlohmann::json extra = nlohmann::json::object();  // non-standard top-level fields (routing: "tinfer_route")
};

struct Usage {
  int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

// A token's text as logprobs show it: itself when it is valid UTF-8, else OpenAI's byte form
// "bytes:\\xe2\\x80" (one \\xNN per byte), so partial characters stay distinct instead of all
// becoming U+FFFD (and colliding as top_logprobs keys).
std::string token_display(const std::string& bytes);

nlohmann::json usage_json(const Usage& u);
nlohmann::json logprobs_json(bool chat, const std::vector<TokenRecord>& records);
// The whole non-streamed response as JSON text, serialized one logprob record at a time and passed
// to `emit` one choice at a time (the head first): peak memory is the records plus one choice's
// text, not a JSON tree ~10x the whole text. `echo`: empty, or one prefix per sample (completions
// echo). Returns false as soon as `emit` does (the client is gone).
// shapers: per sample, null or the chat choice's reasoning / tool-call split (message.reasoning_content,
// message.tool_calls or the legacy function_call, finish_reason "tool_calls").
bool write_full_response(const ResponseMeta& m, const std::vector<SampleOutput>& samples,
                         const std::vector<std::string>& echo, const Usage& u, const std::vector<std::string>& warnings,
                         const std::function<bool(std::string_view)>& emit,
                         const std::vector<std::unique_ptr<ChoiceShaper>>* shapers = nullptr);
// The same text as one string (tests).
std::string full_response_body(const ResponseMeta& m, const std::vector<SampleOutput>& samples,
                               const std::vector<std::string>& echo, const Usage& u,
                               const std::vector<std::string>& warnings);
// One streamed delta for choice `index`. `first` adds the chat role; finish_reason "" = null.
nlohmann::json stream_chunk(const ResponseMeta& m, int index, const std::string& text,
                            const std::vector<TokenRecord>* records, const std::string& finish_reason, bool first);
// A shaped chat delta: content, reasoning_content and tool_calls pieces (OpenAI's shape: a call's first piece has
// its index, id, type and name; later pieces its index and argument text). Legacy: delta.function_call.
nlohmann::json shaped_chunk(const ResponseMeta& m, int index, const toolcall::ParseDelta& d,
                            const std::vector<TokenRecord>* records, const std::string& finish_reason, bool legacy);
nlohmann::json usage_chunk(const ResponseMeta& m, const Usage& u);

// JSON text that never throws on invalid UTF-8 (replaced by U+FFFD).
std::string dump(const nlohmann::json& j);
// "data: {...}\n\n"
std::string sse(const nlohmann::json& j);

}  // namespace tinfer::server

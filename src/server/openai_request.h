// OpenAI request bodies (/v1/completions, /v1/chat/completions) parsed and range-checked into a plain
// struct. Fields for features the server lacks are refused (refused_fields.h); other unknown fields
// are ignored; every wrong type or value throws ApiError naming the field.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/output_format.h"
#include "server/tool_request.h"
#include "tinfer/sampler.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer::server {

// One completions prompt: text, or token ids (not yet checked against the vocabulary).
struct PromptInput {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};

struct CompletionRequest {
  bool chat = false;
  std::string model;  // "" if absent
  // Completions: one or more prompts (each its own engine request); chat: messages.
  std::vector<PromptInput> prompts;
  std::vector<ChatMessage> messages;
  std::string tools_json;  // chat "tools" (JSON array) for the template; "" when none
  bool echo = false;  // completions: the prompt's text is prepended to each choice

  int max_tokens = -1;            // -1: not given (the engine default applies)
  SamplingParams sampling;        // logprobs / top_logprobs filled from the endpoint's fields
  std::vector<std::string> stop;  // stop strings, matched on detokenized text
  int n = 1;
  bool stream = false;
  bool include_usage = false;    // stream_options.include_usage
  int completion_logprobs = -1;  // completions "logprobs": N top entries; -1 = off
  bool chat_logprobs = false;    // chat "logprobs": true
  bool ignore_eos = false;       // vLLM extension, handy for benchmarks
  bool speculative = true;       // false: no speculative drafting for this request (when the server runs --spec)
  std::vector<int32_t> stop_token_ids;  // vLLM extension: finish with "stop" when one is sampled (kept in the text)
  std::string user;
  // Beam search (vLLM's use_beam_search): n beams, the n best hypotheses as the choices; temperature 0.
  bool use_beam_search = false;
  float length_penalty = 1.0f;
  bool early_stopping = false;
  // Structured output (response_format, guided_*, structured_outputs, json_schema, grammar): compiled by the server.
  std::optional<OutputFormat> format;
  ToolRequest tools;  // chat: tools, tool_choice, parallel_tool_calls (or the legacy functions / function_call)
};

constexpr int kMaxN = 16;  // bounds n, and prompts x n for a list of prompts
constexpr int kMaxStops = 8;
constexpr int kMaxStopTokenIds = 64;

// Parses a request body already decoded as JSON. `chat` selects the endpoint's schema.
// raw_body: the body's text when the caller has it (schemas and tools keep their key order); "" = `body`.
CompletionRequest parse_completion_request(const nlohmann::json& body, bool chat, std::string_view raw_body = {});

}  // namespace tinfer::server

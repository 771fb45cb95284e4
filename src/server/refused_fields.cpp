// The table of refused fields. A row: the field, the endpoints it applies to, whether a given value
// asks for nothing (accepted), and what to tell the client instead.
#include "server/refused_fields.h"

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/json_integer.h"

namespace tinfer::server {
namespace {

using nlohmann::json;

enum Where { kCompletions = 1, kChat = 2, kBoth = 3 };

struct Refused {
  const char* name;
  Where where;
  bool (*harmless)(const json& v, int n);  // null counts as harmless always
  const char* why;
};

bool never(const json&, int) { return false; }
bool is_false(const json& v, int) { return v.is_boolean() && !v.get<bool>(); }
bool is_zero(const json& v, int) { return v.is_number() && v.get<double>() == 0; }
bool empty_string(const json& v, int) { return v.is_string() && v.get<std::string>().empty(); }
// best_of is an integer field like n: 2.0 is 2 (the shared reader), 1.5 is a 400 naming it.
bool best_of_is_n(const json& v, int n) { return json_integer(v, "best_of", 1, INT32_MAX) == n; }
bool is_true(const json& v, int) { return v.is_boolean() && v.get<bool>(); }
bool text_only(const json& v, int) { return v.is_array() && v.size() == 1 && v[0] == "text"; }

const Refused kRefused[] = {
    // OpenAI fields.
    {"suffix", kCompletions, empty_string, "insertion (suffix) is not supported"},
    {"best_of", kCompletions, best_of_is_n, "server-side best-of ranking is not supported; best_of must equal n"},
    {"prediction", kChat, never, "predicted outputs are not supported"},
    {"audio", kChat, never, "audio output is not supported"},
    {"modalities", kChat, text_only, "only [\"text\"] output is supported"},
    {"reasoning_effort", kChat, never, "this model does not take a reasoning effort"},
    {"web_search_options", kChat, never, "web search is not supported"},
    {"echo", kChat, is_false, "echo is a /v1/completions field; chat echo is not supported"},
    // vLLM extensions a client may send expecting them to work.
    {"prompt_logprobs", kBoth, is_zero, "prompt logprobs are not supported"},
    {"min_tokens", kBoth, is_zero, "min_tokens is not supported"},
    {"include_stop_str_in_output", kBoth, is_false, "stop strings are never included in the output"},
    {"skip_special_tokens", kBoth, is_true, "special tokens are always skipped in the text"},
    {"return_tokens_as_token_ids", kBoth, is_false, "logprob tokens are always returned as text"},
    {"truncate_prompt_tokens", kBoth, never, "prompt truncation is not supported"},
    {"chat_template", kChat, never, "the model's own chat template is always used"},
    {"chat_template_kwargs", kChat, never, "chat template arguments are not supported"},
    {"add_generation_prompt", kChat, is_true, "the assistant generation prompt is always added"},
    {"continue_final_message", kChat, is_false, "continuing the final message is not supported"},
    {"documents", kChat, never, "documents (RAG templates) are not supported"},
};

}  // namespace

void refuse_unsupported_fields(const json& body, bool chat, int n) {
  const Where here = chat ? kChat : kCompletions;
  for (const Refused& r : kRefused) {
    if (!(r.where & here)) continue;
    auto it = body.find(r.name);
    if (it == body.end() || it->is_null() || r.harmless(*it, n)) continue;
    throw ApiError(400, std::string("'") + r.name + "' is not supported by this server: " + r.why, r.name,
                   "unsupported_parameter");
  }
}

std::vector<std::string> refused_field_names(bool chat) {
  std::vector<std::string> out;
  for (const Refused& r : kRefused)
    if (r.where & (chat ? kChat : kCompletions)) out.emplace_back(r.name);
  return out;
}

}  // namespace tinfer::server

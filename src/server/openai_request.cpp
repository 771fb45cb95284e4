// Field-by-field parsing of OpenAI completion/chat bodies: each getter checks the JSON type and the
// range, and names the field in its ApiError, so a client always learns which field was wrong.
#include "server/openai_request.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace tinfer::server {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw ApiError(400, "'" + field + "' " + what, field, "invalid_value");
}

// nullptr when absent or null (OpenAI treats null as "not given").
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t get_int(const json& v, const std::string& name, int64_t lo, int64_t hi) {
  if (!v.is_number_integer() && !v.is_number_unsigned()) {
    // Integral floats (e.g. 16.0) are accepted as integers; anything else is a type error.
    if (!v.is_number_float() || std::floor(v.get<double>()) != v.get<double>()) bad(name, "must be an integer");
  }
  double d = v.get<double>();
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) d = static_cast<double>(hi) + 1;
  if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
    bad(name, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
  return v.is_number_float() ? static_cast<int64_t>(d) : v.get<int64_t>();
}

double get_num(const json& v, const std::string& name, double lo, double hi) {
  if (!v.is_number()) bad(name, "must be a number");
  double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    std::string r = "[" + json(lo).dump() + ", " + json(hi).dump() + "]";
    bad(name, "must be in " + r + ", got " + v.dump());
  }
  return d;
}

bool get_bool(const json& v, const std::string& name) {
  if (!v.is_boolean()) bad(name, "must be a boolean");
  return v.get<bool>();
}

std::string get_str(const json& v, const std::string& name) {
  if (!v.is_string()) bad(name, "must be a string");
  return v.get<std::string>();
}

// Chat content: a string, or a list of {"type": "text", "text": ...} parts (joined).
std::string message_content(const json& v, const std::string& name) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) bad(name, "must be a string or a list of content parts");
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    const json& part = v[i];
    std::string pn = name + "[" + std::to_string(i) + "]";
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text"))
      bad(pn, "must be a {\"type\": \"text\", \"text\": ...} part (only text is supported)");
    out += get_str(part["text"], pn + ".text");
  }
  return out;
}

void parse_prompt(const json& v, CompletionRequest& r) {
  if (v.is_string()) {
    r.prompt_text = v.get<std::string>();
    return;
  }
  // A list of token ids, or a one-element list holding a string or a token list (batched prompts
  // beyond one are not supported: use n or several requests).
  if (!v.is_array()) bad("prompt", "must be a string or a list of token ids");
  if (v.size() == 1 && (v[0].is_string() || v[0].is_array())) return parse_prompt(v[0], r);
  if (v.empty()) bad("prompt", "must not be empty");
  r.prompt_is_ids = true;
  for (size_t i = 0; i < v.size(); ++i)
    r.prompt_ids.push_back(static_cast<int32_t>(get_int(v[i], "prompt[" + std::to_string(i) + "]", 0, INT32_MAX)));
}

void parse_messages(const json& v, CompletionRequest& r) {
  if (!v.is_array() || v.empty()) bad("messages", "must be a non-empty list of messages");
  for (size_t i = 0; i < v.size(); ++i) {
    std::string pn = "messages[" + std::to_string(i) + "]";
    const json& m = v[i];
    if (!m.is_object()) bad(pn, "must be an object with 'role' and 'content'");
    const json* role = field(m, "role");
    if (!role) bad(pn + ".role", "is required");
    std::string rs = get_str(*role, pn + ".role");
    if (rs != "system" && rs != "user" && rs != "assistant" && rs != "developer" && rs != "tool")
      bad(pn + ".role", "must be one of system, developer, user, assistant, tool; got '" + rs + "'");
    auto c = m.find("content");
    r.messages.push_back({rs == "developer" ? "system" : rs, c == m.end() ? "" : message_content(*c, pn + ".content")});
  }
}

void parse_stop(const json& v, CompletionRequest& r) {
  if (v.is_string()) {
    r.stop.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    if (v.size() > kMaxStops) bad("stop", "may hold at most " + std::to_string(kMaxStops) + " strings");
    for (size_t i = 0; i < v.size(); ++i) r.stop.push_back(get_str(v[i], "stop[" + std::to_string(i) + "]"));
  } else {
    bad("stop", "must be a string or a list of strings");
  }
  for (const auto& s : r.stop)
    if (s.empty()) bad("stop", "strings must not be empty");
}

}  // namespace

CompletionRequest parse_completion_request(const json& body, bool chat) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object", "", "invalid_body");
  CompletionRequest r;
  r.chat = chat;
  if (auto v = field(body, "model")) r.model = get_str(*v, "model");
  if (chat) {
    const json* m = field(body, "messages");
    if (!m) bad("messages", "is required");
    parse_messages(*m, r);
  } else {
    const json* p = field(body, "prompt");
    if (!p) bad("prompt", "is required");
    parse_prompt(*p, r);
  }
  // max_completion_tokens (newer chat name) wins over max_tokens when both are given.
  if (auto v = field(body, "max_tokens")) r.max_tokens = static_cast<int>(get_int(*v, "max_tokens", 1, INT32_MAX));
  if (auto v = field(body, "max_completion_tokens"))
    r.max_tokens = static_cast<int>(get_int(*v, "max_completion_tokens", 1, INT32_MAX));
  SamplingParams& s = r.sampling;
  if (auto v = field(body, "temperature")) s.temperature = static_cast<float>(get_num(*v, "temperature", 0, 2));
  if (auto v = field(body, "top_p")) s.top_p = static_cast<float>(get_num(*v, "top_p", 0, 1));
  if (s.top_p <= 0) bad("top_p", "must be in (0, 1]");
  if (auto v = field(body, "top_k")) {
    int64_t k = get_int(*v, "top_k", -1, INT32_MAX);
    s.top_k = k < 0 ? 0 : static_cast<int>(k);  // -1 = off (vLLM spelling)
  }
  if (auto v = field(body, "min_p")) s.min_p = static_cast<float>(get_num(*v, "min_p", 0, 1));
  if (auto v = field(body, "presence_penalty"))
    s.presence_penalty = static_cast<float>(get_num(*v, "presence_penalty", -2, 2));
  if (auto v = field(body, "frequency_penalty"))
    s.frequency_penalty = static_cast<float>(get_num(*v, "frequency_penalty", -2, 2));
  if (auto v = field(body, "repetition_penalty")) {
    s.repetition_penalty = static_cast<float>(get_num(*v, "repetition_penalty", 0, 100));
    if (s.repetition_penalty <= 0) bad("repetition_penalty", "must be > 0");
  }
  if (auto v = field(body, "seed")) s.seed = get_int(*v, "seed", INT64_MIN, INT64_MAX);
  if (s.seed < 0) s.seed = -1;  // negative seeds mean "random", as the engine spells it
  if (auto v = field(body, "stop")) parse_stop(*v, r);
  if (auto v = field(body, "n")) r.n = static_cast<int>(get_int(*v, "n", 1, kMaxN));
  if (auto v = field(body, "stream")) r.stream = get_bool(*v, "stream");
  if (auto v = field(body, "stream_options")) {
    if (!v->is_object()) bad("stream_options", "must be an object");
    if (auto u = field(*v, "include_usage")) r.include_usage = get_bool(*u, "stream_options.include_usage");
  }
  if (chat) {
    if (auto v = field(body, "logprobs")) r.chat_logprobs = get_bool(*v, "logprobs");
    if (auto v = field(body, "top_logprobs")) {
      s.top_logprobs = static_cast<int>(get_int(*v, "top_logprobs", 0, SamplingParams::kMaxTopLogprobs));
      if (!r.chat_logprobs && s.top_logprobs > 0) bad("top_logprobs", "requires 'logprobs': true");
    }
    s.logprobs = r.chat_logprobs;
  } else if (auto v = field(body, "logprobs")) {
    // Completions: an integer number of top entries (0 = only the chosen token's logprob).
    r.completion_logprobs = static_cast<int>(get_int(*v, "logprobs", 0, 5));
    s.logprobs = true;
    s.top_logprobs = r.completion_logprobs;
  }
  if (auto v = field(body, "ignore_eos")) r.ignore_eos = get_bool(*v, "ignore_eos");
  if (auto v = field(body, "user")) r.user = get_str(*v, "user");
  for (const auto& msg : s.validate()) throw ApiError(400, msg, "", "invalid_value");
  return r;
}

}  // namespace tinfer::server

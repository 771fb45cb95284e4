// Field-by-field parsing of OpenAI completion/chat bodies: each getter checks the JSON type and the
// range, and names the field in its ApiError, so a client always learns which field was wrong.
#include "server/openai_request.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/refused_fields.h"

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

// Chat content: a string, or a list of {"type": "text", "text": ...} parts (kept as parts for
// templates that read them, and joined for those that do not).
void message_content(const json& v, const std::string& name, ChatMessage& m) {
  if (v.is_null()) return;
  if (v.is_string()) {
    m.content = v.get<std::string>();
    return;
  }
  if (!v.is_array()) bad(name, "must be a string or a list of content parts");
  for (size_t i = 0; i < v.size(); ++i) {
    const json& part = v[i];
    std::string pn = name + "[" + std::to_string(i) + "]";
    if (!part.is_object()) bad(pn, "must be a {\"type\": \"text\", \"text\": ...} part");
    // Checked by hand: json::value("type", "") throws a type_error on a non-string, which the HTTP
    // layer would report as invalid JSON.
    const json* type = field(part, "type");
    if (!type) bad(pn + ".type", "is required");
    if (get_str(*type, pn + ".type") != "text")
      bad(pn + ".type", "must be \"text\" (only text content is supported), got " + type->dump());
    const json* text = field(part, "text");
    if (!text) bad(pn + ".text", "is required");
    m.parts.push_back(get_str(*text, pn + ".text"));
    m.content += m.parts.back();
  }
}

std::vector<int32_t> token_ids(const json& v, const std::string& name) {
  if (v.empty()) bad(name, "must not be empty");
  std::vector<int32_t> ids;
  for (size_t i = 0; i < v.size(); ++i)
    ids.push_back(static_cast<int32_t>(get_int(v[i], name + "[" + std::to_string(i) + "]", 0, INT32_MAX)));
  return ids;
}

// A string, a list of token ids, a list of strings, or a list of token-id lists (OpenAI's four forms).
void parse_prompt(const json& v, CompletionRequest& r) {
  if (v.is_string()) {
    r.prompts.push_back({v.get<std::string>(), {}, false});
    return;
  }
  if (!v.is_array()) bad("prompt", "must be a string, a list of strings, or a list of token ids (or of such lists)");
  if (v.empty()) bad("prompt", "must not be empty");
  if (!v[0].is_string() && !v[0].is_array()) {
    r.prompts.push_back({"", token_ids(v, "prompt"), true});
    return;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    std::string pn = "prompt[" + std::to_string(i) + "]";
    if (v[i].is_string()) r.prompts.push_back({v[i].get<std::string>(), {}, false});
    else if (v[i].is_array()) r.prompts.push_back({"", token_ids(v[i], pn), true});
    else bad(pn, "must be a string or a list of token ids, like the other prompts");
  }
}

// {"token id": bias}: ids as decimal strings (canonical, so "07" cannot alias "7"), bias in [-100, 100].
void parse_logit_bias(const json& v, SamplingParams& s) {
  if (!v.is_object()) bad("logit_bias", "must be an object mapping token ids to biases");
  for (const auto& [key, val] : v.items()) {
    int64_t id = -1;
    if (!key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos)
      id = std::stoll(key);
    if (id < 0 || id > INT32_MAX || std::to_string(id) != key)
      bad("logit_bias", "keys must be token ids written as decimal integers, got " + json(key).dump());
    const double b = get_num(val, "logit_bias", -SamplingParams::kMaxLogitBias, SamplingParams::kMaxLogitBias);
    s.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(b));
  }
}

// Any JSON integer in [-2^63, 2^64); negative values are taken as two's complement (mod 2^64), as
// torch.Generator.manual_seed (and so vLLM) maps them -- every value is a distinct deterministic seed.
uint64_t get_seed(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) return static_cast<uint64_t>(v.get<int64_t>());
  // Integral floats are integers here as for every integer field, while they are exact (|x| <= 2^53).
  const double d = v.is_number_float() ? v.get<double>() : 0.5;
  if (std::floor(d) == d && std::fabs(d) <= 0x1p53) return static_cast<uint64_t>(static_cast<int64_t>(d));
  bad("seed", "must be an integer in [-2^63, 2^64), got " + v.dump());
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
    ChatMessage msg;
    msg.role = rs == "developer" ? "system" : rs;
    if (const json* c = field(m, "content")) message_content(*c, pn + ".content", msg);
    // Tool calling: the assistant's calls and a tool result's id/name go to the template as they came.
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    for (const char* k : {"tool_calls", "tool_call_id", "name"})
      if (const json* x = field(m, k)) extra[k] = nlohmann::ordered_json::parse(x->dump());
    if (const json* tc = field(m, "tool_calls")) {
      if (!tc->is_array()) bad(pn + ".tool_calls", "must be a list");
      msg.content_null = !field(m, "content");  // templates test `content is none` on tool-call turns
    }
    if (!extra.empty()) msg.extra_json = extra.dump();
    r.messages.push_back(std::move(msg));
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

// use_beam_search, length_penalty, early_stopping (vLLM's names). Beam search is deterministic: an absent
// temperature means 0, any other is refused; results exist only when the search ends, so no streaming.
void parse_beam_search(const json& body, CompletionRequest& r) {
  if (auto v = field(body, "use_beam_search")) r.use_beam_search = get_bool(*v, "use_beam_search");
  if (auto v = field(body, "length_penalty")) r.length_penalty = static_cast<float>(get_num(*v, "length_penalty", -10, 10));
  if (auto v = field(body, "early_stopping")) r.early_stopping = get_bool(*v, "early_stopping");
  if (!r.use_beam_search) return;
  if (!field(body, "temperature")) r.sampling.temperature = 0;
  if (r.sampling.temperature != 0) bad("temperature", "must be 0 with use_beam_search (beam search is deterministic)");
  if (r.stream) bad("stream", "cannot be combined with use_beam_search (the results exist only when the search ends)");
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
    if (const json* t = field(body, "tools")) {
      if (!t->is_array()) bad("tools", "must be a list of tool definitions");
      for (size_t i = 0; i < t->size(); ++i)
        if (!(*t)[i].is_object()) bad("tools[" + std::to_string(i) + "]", "must be an object");
      // Passed to the template as JSON values. Keys come out sorted (the body is parsed into sorted
      // maps), so tojson prints them in that order rather than the client's.
      if (!t->empty()) r.tools_json = nlohmann::ordered_json::parse(t->dump()).dump();
    }
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
  if (auto v = field(body, "seed")) s.seed = get_seed(*v);
  if (auto v = field(body, "logit_bias")) parse_logit_bias(*v, s);
  if (auto v = field(body, "stop")) parse_stop(*v, r);
  if (auto v = field(body, "n")) r.n = static_cast<int>(get_int(*v, "n", 1, kMaxN));
  if (r.prompts.size() * static_cast<size_t>(r.n) > kMaxN)
    bad("prompt", "holds " + std::to_string(r.prompts.size()) + " prompts; prompts x n (" + std::to_string(r.n) +
                      ") must be at most " + std::to_string(kMaxN));
  if (auto v = field(body, "stream")) r.stream = get_bool(*v, "stream");
  if (auto v = field(body, "stream_options")) {
    if (!v->is_object()) bad("stream_options", "must be an object");
    if (auto u = field(*v, "include_usage")) r.include_usage = get_bool(*u, "stream_options.include_usage");
    // vLLM's usage in every chunk: not done, so not silently ignored either.
    if (auto u = field(*v, "continuous_usage_stats"); u && !(u->is_boolean() && !u->get<bool>()))
      throw ApiError(400, "'stream_options.continuous_usage_stats' is not supported by this server",
                     "stream_options.continuous_usage_stats", "unsupported_parameter");
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
  if (!chat) {
    if (auto v = field(body, "echo")) r.echo = get_bool(*v, "echo");
    // Echo with logprobs needs the prompt tokens' logprobs, which the engine does not compute.
    if (r.echo && s.logprobs) bad("echo", "cannot be combined with 'logprobs' (prompt logprobs are not supported)");
  }
  if (auto v = field(body, "ignore_eos")) r.ignore_eos = get_bool(*v, "ignore_eos");
  if (auto v = field(body, "speculative")) r.speculative = get_bool(*v, "speculative");
  if (auto v = field(body, "stop_token_ids"); v && !v->is_null()) {
    if (!v->is_array() || v->size() > kMaxStopTokenIds)
      bad("stop_token_ids", "must be a list of at most " + std::to_string(kMaxStopTokenIds) + " token ids");
    if (!v->empty()) r.stop_token_ids = token_ids(*v, "stop_token_ids");  // (vocabulary: checked by the engine)
  }
  if (auto v = field(body, "user")) r.user = get_str(*v, "user");
  parse_beam_search(body, r);
  refuse_unsupported_fields(body, chat, r.n);
  for (const auto& msg : s.validate()) throw ApiError(400, msg, "", "invalid_value");
  return r;
}

}  // namespace tinfer::server

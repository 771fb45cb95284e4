// Field-by-field parsing of OpenAI completion/chat bodies: each getter checks the JSON type and the
// range, and names the field in its ApiError, so a client always learns which field was wrong. The fields
// sit in tables (kSamplingFields, kOutputFields) in the order they are checked: the first wrong one is reported.
#include "server/openai_request.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/json_integer.h"
#include "server/refused_fields.h"
#include "server/tool_request.h"

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
  return json_integer(v, name, lo, hi);  // whole-number floats (16.0) are integers, as in every endpoint
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

// Templates print a call's arguments with `| tojson`, expecting the object the model wrote; OpenAI clients send
// them back as a string of JSON. A string that parses as an object becomes that object; anything else stays.
void arguments_as_objects(nlohmann::ordered_json& calls) {
  if (!calls.is_array()) return;
  for (auto& c : calls) {
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object()) continue;
    auto& f = c["function"];
    if (!f.contains("arguments") || !f["arguments"].is_string()) continue;
    auto parsed = nlohmann::ordered_json::parse(f["arguments"].get<std::string>(), nullptr, false);
    if (parsed.is_object()) f["arguments"] = std::move(parsed);
  }
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
      arguments_as_objects(extra["tool_calls"]);
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
  if (!r.sampling.greedy()) bad("temperature", "must be 0 with use_beam_search (beam search is deterministic)");
  if (r.stream) bad("stream", "cannot be combined with use_beam_search (the results exist only when the search ends)");
}

// The endpoint's input: "messages" (and "tools") for chat, "prompt" for completions.
void parse_input(const json& body, CompletionRequest& r) {
  if (r.chat) {
    const json* m = field(body, "messages");
    if (!m) bad("messages", "is required");
    parse_messages(*m, r);
  } else {
    const json* p = field(body, "prompt");
    if (!p) bad("prompt", "is required");
    parse_prompt(*p, r);
  }
}

// A body field, the endpoints that read it, and how it is read into the request once present (not null).
enum Where { kCompletions = 1, kChat = 2, kBoth = 3 };
struct FieldReader {
  const char* name;
  Where where;
  void (*read)(const json& v, CompletionRequest& r);
};

float get_float(const json& v, const char* name, double lo, double hi) {
  return static_cast<float>(get_num(v, name, lo, hi));
}

// Lengths, sampling and the number of choices, in the order they are checked (the first wrong one is reported).
const FieldReader kSamplingFields[] = {
    {"max_tokens", kBoth,
     [](const json& v, CompletionRequest& r) {
       r.max_tokens = static_cast<int>(get_int(v, "max_tokens", 1, INT32_MAX));
     }},
    // max_completion_tokens (newer chat name) wins over max_tokens when both are given.
    {"max_completion_tokens", kBoth,
     [](const json& v, CompletionRequest& r) {
       r.max_tokens = static_cast<int>(get_int(v, "max_completion_tokens", 1, INT32_MAX));
     }},
    {"temperature", kBoth,
     [](const json& v, CompletionRequest& r) { r.sampling.temperature = get_float(v, "temperature", 0, 2); }},
    {"top_p", kBoth,
     [](const json& v, CompletionRequest& r) {
       r.sampling.top_p = get_float(v, "top_p", 0, 1);
       if (r.sampling.top_p <= 0) bad("top_p", "must be in (0, 1]");
     }},
    {"top_k", kBoth,
     [](const json& v, CompletionRequest& r) {
       int64_t k = get_int(v, "top_k", -1, INT32_MAX);
       r.sampling.top_k = k < 0 ? 0 : static_cast<int>(k);  // -1 = off (vLLM spelling)
     }},
    {"min_p", kBoth, [](const json& v, CompletionRequest& r) { r.sampling.min_p = get_float(v, "min_p", 0, 1); }},
    {"presence_penalty", kBoth,
     [](const json& v, CompletionRequest& r) {
       r.sampling.presence_penalty = get_float(v, "presence_penalty", -2, 2);
     }},
    {"frequency_penalty", kBoth,
     [](const json& v, CompletionRequest& r) {
       r.sampling.frequency_penalty = get_float(v, "frequency_penalty", -2, 2);
     }},
    {"repetition_penalty", kBoth,
     [](const json& v, CompletionRequest& r) {
       r.sampling.repetition_penalty = get_float(v, "repetition_penalty", 0, 100);
       if (r.sampling.repetition_penalty <= 0) bad("repetition_penalty", "must be > 0");
     }},
    {"seed", kBoth, [](const json& v, CompletionRequest& r) { r.sampling.seed = get_seed(v); }},
    {"logit_bias", kBoth, [](const json& v, CompletionRequest& r) { parse_logit_bias(v, r.sampling); }},
    {"stop", kBoth, [](const json& v, CompletionRequest& r) { parse_stop(v, r); }},
    {"n", kBoth, [](const json& v, CompletionRequest& r) { r.n = static_cast<int>(get_int(v, "n", 1, kMaxN)); }},
};

// Streaming, logprobs, echo and the vLLM extensions, in the order they are checked.
const FieldReader kOutputFields[] = {
    {"stream", kBoth, [](const json& v, CompletionRequest& r) { r.stream = get_bool(v, "stream"); }},
    {"stream_options", kBoth,
     [](const json& v, CompletionRequest& r) {
       if (!v.is_object()) bad("stream_options", "must be an object");
       // As OpenAI and vLLM: options of a stream on a whole response are a client's mistake ({} asks for nothing).
       if (!r.stream && !v.empty()) bad("stream_options", "can only be given when 'stream' is true");
       if (auto u = field(v, "include_usage")) r.include_usage = get_bool(*u, "stream_options.include_usage");
       // vLLM's usage in every chunk: not done, so not silently ignored either.
       if (auto u = field(v, "continuous_usage_stats"); u && !(u->is_boolean() && !u->get<bool>()))
         throw ApiError(400, "'stream_options.continuous_usage_stats' is not supported by this server",
                        "stream_options.continuous_usage_stats", "unsupported_parameter");
     }},
    // Chat: "logprobs": true, and "top_logprobs" entries with it.
    {"logprobs", kChat,
     [](const json& v, CompletionRequest& r) { r.sampling.logprobs = r.chat_logprobs = get_bool(v, "logprobs"); }},
    {"top_logprobs", kChat,
     [](const json& v, CompletionRequest& r) {
       r.sampling.top_logprobs = static_cast<int>(get_int(v, "top_logprobs", 0, SamplingParams::kMaxTopLogprobs));
       if (!r.chat_logprobs && r.sampling.top_logprobs > 0) bad("top_logprobs", "requires 'logprobs': true");
     }},
    // Completions: an integer number of top entries (0 = only the chosen token's logprob).
    {"logprobs", kCompletions,
     [](const json& v, CompletionRequest& r) {
       r.completion_logprobs = static_cast<int>(get_int(v, "logprobs", 0, 5));
       r.sampling.logprobs = true;
       r.sampling.top_logprobs = r.completion_logprobs;
     }},
    {"echo", kCompletions,
     [](const json& v, CompletionRequest& r) {
       r.echo = get_bool(v, "echo");
       // Echo with logprobs needs the prompt tokens' logprobs, which the engine does not compute.
       if (r.echo && r.sampling.logprobs)
         bad("echo", "cannot be combined with 'logprobs' (prompt logprobs are not supported)");
     }},
    {"ignore_eos", kBoth, [](const json& v, CompletionRequest& r) { r.ignore_eos = get_bool(v, "ignore_eos"); }},
    {"speculative", kBoth, [](const json& v, CompletionRequest& r) { r.speculative = get_bool(v, "speculative"); }},
    {"stop_token_ids", kBoth,
     [](const json& v, CompletionRequest& r) {
       if (!v.is_array() || v.size() > kMaxStopTokenIds)
         bad("stop_token_ids", "must be a list of at most " + std::to_string(kMaxStopTokenIds) + " token ids");
       if (!v.empty()) r.stop_token_ids = token_ids(v, "stop_token_ids");  // (vocabulary: checked by the engine)
     }},
    {"user", kBoth, [](const json& v, CompletionRequest& r) { r.user = get_str(v, "user"); }},
};

template <size_t N>
void read_fields(const json& body, const FieldReader (&table)[N], CompletionRequest& r) {
  const Where endpoint = r.chat ? kChat : kCompletions;
  for (const FieldReader& f : table)
    if (f.where & endpoint)
      if (const json* v = field(body, f.name)) f.read(*v, r);
}

}  // namespace

CompletionRequest parse_completion_request(const json& body, bool chat, std::string_view raw_body) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object", "", "invalid_body");
  CompletionRequest r;
  r.chat = chat;
  if (auto v = field(body, "model")) r.model = get_str(*v, "model");
  parse_input(body, r);
  read_fields(body, kSamplingFields, r);
  if (r.prompts.size() * static_cast<size_t>(r.n) > kMaxN)
    bad("prompt", "holds " + std::to_string(r.prompts.size()) + " prompts; prompts x n (" + std::to_string(r.n) +
                      ") must be at most " + std::to_string(kMaxN));
  read_fields(body, kOutputFields, r);
  parse_beam_search(body, r);
  refuse_unsupported_fields(body, chat, r.n);
  r.format = parse_output_format(body, chat, raw_body);
  if (chat) {  // tools go to the template in the client's key order; calls are parsed from (or forced on) the answer
    r.tools = parse_tool_request(body, raw_body);
    r.tools_json = r.tools.tools_json;
  }
  for (const auto& msg : r.sampling.validate()) throw ApiError(400, msg, "", "invalid_value");
  return r;
}

}  // namespace tinfer::server

// Builders for the OpenAI wire format; field order and nulls follow OpenAI's own responses so that
// strict clients (the official SDKs) parse them.
#include "server/openai_response.h"

#include <cstdio>

#include "text/tokenizer/unicode_util.h"
#include "server/api_error.h"

namespace tinfer::server {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }

std::string error_body(const ApiError& e) {
  json err = {{"message", e.what()},
              {"type", e.type},
              {"param", e.param.empty() ? json(nullptr) : json(e.param)},
              {"code", e.code.empty() ? json(nullptr) : json(e.code)}};
  return dump(json{{"error", err}});
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

bool valid_utf8(const std::string& s) {
  // Decoding then re-encoding reproduces the bytes exactly when they are valid UTF-8 (an invalid
  // byte decodes to U+FFFD, whose encoding differs from it).
  std::string back;
  for (size_t i = 0; i < s.size();) unicode::append_utf8(back, unicode::next_cp(s, i));
  return back == s;
}

json chat_entry(const TokenRecord& r) {
  json top = json::array();
  for (const auto& [t, lp] : r.top)
    top.push_back({{"token", token_display(t)}, {"logprob", lp}, {"bytes", bytes_of(t)}});
  return {{"token", token_display(r.text)}, {"logprob", r.logprob}, {"bytes", bytes_of(r.text)}, {"top_logprobs", top}};
}

json completion_top(const TokenRecord& r) {
  json top = json::object();
  for (const auto& [t, lp] : r.top) top[token_display(t)] = lp;
  return top;
}

// "[a,b,...]" from one small JSON value per record.
template <class F>
void append_array(std::string& out, const std::vector<TokenRecord>& records, F value_of) {
  out += '[';
  for (size_t i = 0; i < records.size(); ++i) {
    if (i) out += ',';
    out += dump(value_of(records[i]));
  }
  out += ']';
}

// The same JSON as logprobs_json(), written record by record.
void append_logprobs(std::string& out, bool chat, const std::vector<TokenRecord>& records) {
  if (chat) {
    out += "{\"content\":";
    append_array(out, records, chat_entry);
    out += ",\"refusal\":null}";
    return;
  }
  out += "{\"text_offset\":";
  append_array(out, records, [](const TokenRecord& r) { return json(r.text_offset); });
  out += ",\"token_logprobs\":";
  append_array(out, records, [](const TokenRecord& r) { return json(r.logprob); });
  out += ",\"tokens\":";
  append_array(out, records, [](const TokenRecord& r) { return json(token_display(r.text)); });
  out += ",\"top_logprobs\":";
  append_array(out, records, completion_top);
  out += '}';
}

// Appends dump(j) opened up for one more member: `{...,"key":` (the caller closes it with '}').
void open_with(std::string& out, const json& j, const char* key) {
  out += dump(j);
  out.pop_back();
  out += std::string(",\"") + key + "\":";
}

}  // namespace

std::string token_display(const std::string& bytes) {
  if (valid_utf8(bytes)) return bytes;
  std::string out = "bytes:";
  char b[8];
  for (unsigned char c : bytes) {
    std::snprintf(b, sizeof b, "\\x%02x", c);
    out += b;
  }
  return out;
}

json logprobs_json(bool chat, const std::vector<TokenRecord>& records) {
  if (chat) {
    json content = json::array();
    for (const auto& r : records) content.push_back(chat_entry(r));
    return {{"content", content}, {"refusal", nullptr}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  for (const auto& r : records) {
    tokens.push_back(token_display(r.text));
    lps.push_back(r.logprob);
    tops.push_back(completion_top(r));
    offs.push_back(r.text_offset);
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

namespace {

// message for a shaped choice: content (null when only calls were made), reasoning_content, tool_calls.
json shaped_message(const ChoiceShaper& sh) {
  json msg = {{"role", "assistant"}, {"refusal", nullptr}};
  msg["content"] = sh.content().empty() && !sh.calls().empty() ? json(nullptr) : json(sh.content());
  if (!sh.reasoning().empty()) msg["reasoning_content"] = sh.reasoning();
  if (sh.calls().empty()) return msg;
  if (sh.legacy()) {
    msg["function_call"] = {{"name", sh.calls()[0].name}, {"arguments", sh.calls()[0].arguments}};
    return msg;
  }
  json calls = json::array();
  for (const toolcall::ToolCall& c : sh.calls())
    calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  msg["tool_calls"] = std::move(calls);
  return msg;
}

}  // namespace

bool write_full_response(const ResponseMeta& m, const std::vector<SampleOutput>& samples,
                         const std::vector<std::string>& echo, const Usage& u, const std::vector<std::string>& warnings,
                         const std::function<bool(std::string_view)>& emit,
                         const std::vector<std::unique_ptr<ChoiceShaper>>* shapers) {
  json head = {{"id", m.id},
               {"object", m.chat ? "chat.completion" : "text_completion"},
               {"created", m.created},
               {"model", m.model},
               {"usage", usage_json(u)},
               {"system_fingerprint", nullptr}};
  if (!warnings.empty()) head["warnings"] = warnings;
  for (const auto& [k, v] : m.extra.items()) head[k] = v;
  std::string out;
  open_with(out, head, "choices");
  out += '[';
  for (size_t i = 0; i < samples.size(); ++i) {
    const SampleOutput& s = samples[i];
    const ChoiceShaper* sh = shapers && i < shapers->size() ? (*shapers)[i].get() : nullptr;
    json c;
    if (m.chat && sh) {
      c = {{"index", i}, {"message", shaped_message(*sh)}, {"finish_reason", sh->finish_reason(s.finish_reason())}};
    } else if (m.chat) {
      c = {{"index", i},
           {"message", {{"role", "assistant"}, {"content", s.text()}, {"refusal", nullptr}}},
           {"finish_reason", s.finish_reason()}};
    } else {
      c = {{"index", i}, {"text", echo.empty() ? s.text() : echo[i] + s.text()}, {"finish_reason", s.finish_reason()}};
    }
    if (i) out += ',';
    open_with(out, c, "logprobs");
    if (m.logprobs) append_logprobs(out, m.chat, s.records());
    else out += "null";
    out += '}';
    if (!emit(out)) return false;
    out.clear();
  }
  out += "]}";
  return emit(out);
}

std::string full_response_body(const ResponseMeta& m, const std::vector<SampleOutput>& samples,
                               const std::vector<std::string>& echo, const Usage& u,
                               const std::vector<std::string>& warnings) {
  std::string body;
  write_full_response(m, samples, echo, u, warnings, [&](std::string_view piece) {
    body += piece;
    return true;
  });
  return body;
}

json stream_chunk(const ResponseMeta& m, int index, const std::string& text, const std::vector<TokenRecord>* records,
                  const std::string& finish_reason, bool first) {
  json fr = finish_reason.empty() ? json(nullptr) : json(finish_reason);
  json lp = (m.logprobs && records) ? logprobs_json(m.chat, *records) : json(nullptr);
  json choice;
  if (m.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || first) delta["content"] = text;
    choice = {{"index", index}, {"delta", delta}, {"logprobs", lp}, {"finish_reason", fr}};
  } else {
    choice = {{"index", index}, {"text", text}, {"logprobs", lp}, {"finish_reason", fr}};
  }
  return {{"id", m.id},
          {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", m.created},
          {"model", m.model},
          {"choices", json::array({choice})},
          {"system_fingerprint", nullptr}};
}

json shaped_chunk(const ResponseMeta& m, int index, const toolcall::ParseDelta& d, const std::vector<TokenRecord>* records,
                  const std::string& finish_reason, bool legacy) {
  json c = stream_chunk(m, index, d.content, records, finish_reason, false);
  json& delta = c["choices"][0]["delta"];
  if (!d.reasoning.empty()) delta["reasoning_content"] = d.reasoning;
  if (d.calls.empty()) return c;
  if (legacy) {  // one call: its name first, then argument pieces
    json fc = json::object();
    for (const toolcall::ToolCallDelta& p : d.calls) {
      if (!p.name.empty()) fc["name"] = p.name;
      fc["arguments"] = fc.value("arguments", "") + p.arguments;
    }
    delta["function_call"] = fc;
    return c;
  }
  json calls = json::array();
  for (const toolcall::ToolCallDelta& p : d.calls) {
    json e = {{"index", p.index}};
    if (!p.id.empty()) e["id"] = p.id, e["type"] = "function";
    json fn = {{"arguments", p.arguments}};
    if (!p.name.empty()) fn["name"] = p.name;
    e["function"] = std::move(fn);
    calls.push_back(std::move(e));
  }
  delta["tool_calls"] = std::move(calls);
  return c;
}

json usage_chunk(const ResponseMeta& m, const Usage& u) {
  json c = {{"id", m.id},
            {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"choices", json::array()},
            {"usage", usage_json(u)}};
  for (const auto& [k, v] : m.extra.items()) c[k] = v;
  return c;
}

}  // namespace tinfer::server

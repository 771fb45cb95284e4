// Builders for the OpenAI wire format; field order and nulls follow OpenAI's own responses so that
// strict clients (the official SDKs) parse them.
#include "server/openai_response.h"

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
}  // namespace

json logprobs_json(bool chat, const std::vector<TokenRecord>& records) {
  if (chat) {
    json content = json::array();
    for (const auto& r : records) {
      json top = json::array();
      for (const auto& [t, lp] : r.top) top.push_back({{"token", t}, {"logprob", lp}, {"bytes", bytes_of(t)}});
      content.push_back(
          {{"token", r.text}, {"logprob", r.logprob}, {"bytes", bytes_of(r.text)}, {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
  }
  json tokens = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  for (const auto& r : records) {
    tokens.push_back(r.text);
    lps.push_back(r.logprob);
    json top = json::object();
    for (const auto& [t, lp] : r.top) top[t] = lp;
    tops.push_back(top);
    offs.push_back(r.text_offset);
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

json full_response(const ResponseMeta& m, const std::vector<SampleOutput>& samples, const Usage& u,
                   const std::vector<std::string>& warnings) {
  json choices = json::array();
  for (size_t i = 0; i < samples.size(); ++i) {
    const SampleOutput& s = samples[i];
    json lp = m.logprobs ? logprobs_json(m.chat, s.records()) : json(nullptr);
    if (m.chat) {
      choices.push_back({{"index", i},
                         {"message", {{"role", "assistant"}, {"content", s.text()}, {"refusal", nullptr}}},
                         {"logprobs", lp},
                         {"finish_reason", s.finish_reason()}});
    } else {
      choices.push_back({{"index", i}, {"text", s.text()}, {"logprobs", lp}, {"finish_reason", s.finish_reason()}});
    }
  }
  json r = {{"id", m.id},
            {"object", m.chat ? "chat.completion" : "text_completion"},
            {"created", m.created},
            {"model", m.model},
            {"choices", choices},
            {"usage", usage_json(u)},
            {"system_fingerprint", nullptr}};
  if (!warnings.empty()) r["warnings"] = warnings;
  return r;
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

json usage_chunk(const ResponseMeta& m, const Usage& u) {
  return {{"id", m.id},
          {"object", m.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", m.created},
          {"model", m.model},
          {"choices", json::array()},
          {"usage", usage_json(u)}};
}

}  // namespace tinfer::server

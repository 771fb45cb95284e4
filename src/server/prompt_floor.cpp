// PromptFloor: the template probed once with empty and sentinel messages, then floors from counts and byte lengths.
#include "server/prompt_floor.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/openai_request.h"

namespace tinfer::server {
namespace {

using nlohmann::json;

ChatMessage message(const char* role, std::string content = "") {
  ChatMessage m;
  m.role = role;
  m.content = std::move(content);
  return m;
}

// The options a request renders with, and a fixed clock (two probes must not straddle a date change).
ChatOptions probe_options(const Tokenizer& tok, std::string tools_json = "") {
  ChatOptions co;
  co.tools_json = std::move(tools_json);
  co.clock = [](const std::string&) { return std::string("01 Jan 2025"); };
  if (tok.bos() >= 0) co.bos_token = tok.piece(tok.bos());
  if (tok.eos() >= 0) co.eos_token = tok.piece(tok.eos());
  return co;
}

// Tokens of messages encoded as a request's are; -1 when the template refuses them.
int64_t tokens_of(const Tokenizer& tok, const ChatTemplate& tmpl, const std::vector<ChatMessage>& ms) {
  try {
    return static_cast<int64_t>(
        encode_chat(tok, tmpl, ms, probe_options(tok), tok.add_bos_by_default() && tok.bos() >= 0).size());
  } catch (const std::exception&) {
    return -1;
  }
}

// Whether the rendered text holds every sentinel ("" rendered: no).
bool prints_all(const Tokenizer& tok, const ChatTemplate& tmpl, const std::vector<ChatMessage>& ms,
                const std::string& tools_json, const std::vector<std::string>& sentinels) {
  std::string text;
  try {
    text = tmpl.render(ms, probe_options(tok, tools_json)).text;
  } catch (const std::exception&) {
    return false;
  }
  for (const std::string& s : sentinels)
    if (text.find(s) == std::string::npos) return false;
  return true;
}

// Per role, the fewest tokens one more empty message adds after each prefix the template accepts (the first message
// is never counted: a system message there may replace a default one and cost less than nothing).
std::array<int, PromptFloor::kRoles.size()> measure_messages(const Tokenizer& tok, const ChatTemplate& tmpl) {
  const auto& roles = PromptFloor::kRoles;
  std::vector<std::vector<ChatMessage>> prefixes = {{message("user")}};
  for (const char* r : roles) prefixes.push_back({message("user"), message(r)});
  prefixes.push_back({message("user"), message("assistant"), message("user")});
  prefixes.push_back({message("user"), message("assistant"), message("user"), message("assistant")});
  std::array<int64_t, PromptFloor::kRoles.size()> best;
  best.fill(std::numeric_limits<int64_t>::max());
  for (const auto& prefix : prefixes) {
    const int64_t before = tokens_of(tok, tmpl, prefix);
    if (before < 0) continue;
    for (size_t r = 0; r < roles.size(); ++r) {
      std::vector<ChatMessage> more = prefix;
      more.push_back(message(roles[r]));
      const int64_t after = tokens_of(tok, tmpl, more);
      if (after >= 0) best[r] = std::min(best[r], after - before);
    }
  }
  std::array<int, PromptFloor::kRoles.size()> out{};
  for (size_t r = 0; r < roles.size(); ++r)
    if (best[r] != std::numeric_limits<int64_t>::max())
      out[r] = static_cast<int>(std::max<int64_t>(0, best[r] - PromptFloor::kMergeSlack));
  return out;
}

// A tool whose every string is a sentinel: found whole in the text when the template prints the definition.
const char* const kProbeTool =
    R"([{"type":"function","function":{"name":"tinfer_probe_name","description":"tinfer_probe_description",)"
    R"("parameters":{"type":"object","properties":{"tinfer_probe_key":{"type":"string",)"
    R"("description":"tinfer_probe_parameter","enum":["tinfer_probe_enum"]}}}}}])";

// Bytes of s a template keeps whatever it strips: from the first to the last byte that is no whitespace (ASCII
// graphic, or the lead byte of a non-ASCII character outside U+0080..U+00BF and U+0800..U+3FFF, where Unicode's
// whitespace lies). What a template's trim or strip() removes lies outside.
size_t kept_bytes(std::string_view s) {
  auto kept = [](unsigned char c) {
    return (c > 0x20 && c < 0x7F) || (c >= 0xC3 && c <= 0xDF) || (c >= 0xE4 && c <= 0xF4);
  };
  size_t b = 0, e = s.size();
  while (b < e && !kept(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && !kept(static_cast<unsigned char>(s[e - 1]))) --e;
  return e - b;
}

// The kept bytes of every string value in v (keys aside). The body's depth is already bounded (kMaxJsonDepth).
size_t string_bytes(const json& v) {
  if (v.is_string()) return kept_bytes(v.get_ref<const std::string&>());
  size_t n = 0;
  if (v.is_structured())
    for (const json& x : v) n += string_bytes(x);
  return n;
}

int64_t tokens_for_bytes(size_t bytes, size_t bytes_per_token) {
  return bytes_per_token ? static_cast<int64_t>((bytes + bytes_per_token - 1) / bytes_per_token) : 0;
}

size_t role_index(const std::string& role) {
  for (size_t r = 0; r < PromptFloor::kRoles.size(); ++r)
    if (role == PromptFloor::kRoles[r]) return r;
  return PromptFloor::kRoles.size();
}

}  // namespace

PromptFloor PromptFloor::measure(const Tokenizer& tok, const ChatTemplate& tmpl) {
  PromptFloor f;
  f.tokenizer = &tok;
  f.bytes_per_token = tok.max_bytes_per_token();
  f.message_tokens = measure_messages(tok, tmpl);
  f.user_content = prints_all(
      tok, tmpl, {message("user", "tinfer_probe_first"), message("assistant", "x"), message("user", "tinfer_probe_last")},
      "", {"tinfer_probe_first", "tinfer_probe_last"});
  f.tool_strings = prints_all(tok, tmpl, {message("user", "x")}, kProbeTool,
                              {"tinfer_probe_name", "tinfer_probe_description", "tinfer_probe_key",
                               "tinfer_probe_parameter", "tinfer_probe_enum"});
  return f;
}

int64_t PromptFloor::text_floor(std::string_view text) const {
  return tokenizer ? tokens_for_bytes(text.size(), tokenizer->max_bytes_per_token_in(text)) : 0;
}

// Messages shaped like the probes (string content, no tool calls, names or ids) add their role's count; the text
// the template is known to print adds its bytes. Either is a floor of its own (they may share tokens), so the larger.
int64_t PromptFloor::chat_floor(const std::vector<ChatMessage>& messages, const json& body) const {
  int64_t by_count = 0;
  size_t bytes = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const size_t r = role_index(m.role);
    if (i > 0 && r < kRoles.size() && m.parts.empty() && m.extra_json.empty() && !m.content_null)
      by_count += message_tokens[r];
    if (!user_content || m.role != "user") continue;
    if (m.parts.empty()) bytes += kept_bytes(m.content);
    for (const std::string& p : m.parts) bytes += kept_bytes(p);
  }
  if (tool_strings && body.is_object())
    for (const char* k : {"tools", "functions"})
      if (auto it = body.find(k); it != body.end()) bytes += string_bytes(*it);
  return std::max(by_count, tokens_for_bytes(bytes, bytes_per_token));
}

std::string PromptFloor::describe() const {
  std::string s = "prompt floor: " + (bytes_per_token ? std::to_string(bytes_per_token) + " bytes/token" : "no byte bound");
  s += "; tokens per message:";
  for (size_t r = 0; r < kRoles.size(); ++r) s += std::string(" ") + kRoles[r] + " " + std::to_string(message_tokens[r]);
  s += std::string("; user content ") + (user_content ? "printed" : "not known printed");
  s += std::string(", tool strings ") + (tool_strings ? "printed" : "not known printed");
  return s;
}

void refuse_unfit_prompts(const PromptFloor& floor, int max_model_len, const CompletionRequest& req, const json& body) {
  if (max_model_len <= 0) return;  // (no engine measured)
  auto refuse = [&](int64_t tokens, const std::string& field) {
    if (tokens < max_model_len) return;
    throw ApiError(400,
                   "this model's maximum context length is " + std::to_string(max_model_len) +
                       " tokens, but the prompt has at least " + std::to_string(tokens) + " tokens (no room for output)",
                   field, "context_length_exceeded");
  };
  if (req.chat) return refuse(floor.chat_floor(req.messages, body), "messages");
  for (size_t p = 0; p < req.prompts.size(); ++p)
    if (!req.prompts[p].is_ids)
      refuse(floor.text_floor(req.prompts[p].text), req.prompts.size() > 1 ? "prompt[" + std::to_string(p) + "]" : "prompt");
}

}  // namespace tinfer::server

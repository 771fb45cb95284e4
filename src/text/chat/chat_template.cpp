// ChatTemplate: messages and options -> Jinja variables (as Hugging Face's apply_chat_template
// passes them), render, and the prompt's literal ranges from the rendered string's provenance.
// What is literal: every string of the caller's data -- message contents (and content parts), tool
// definitions, tool calls and other message fields -- and anything the template derives from them
// (see jinja/filters.cpp). Roles are template text: they are checked against a fixed set by callers.
#include "text/chat/chat_template.h"

#include <fstream>
#include <sstream>

#include "tinfer/error.h"
#include "text/jinja/template.h"

namespace tinfer {

using jinja::Dict;
using jinja::List;
using jinja::Str;
using jinja::Value;

ChatTemplate::ChatTemplate(const std::string& source, const std::string& origin) : source_(source) {
  try {
    t_ = std::make_shared<const jinja::Template>(source);
  } catch (const Error& e) {
    fail(origin == "chat template" ? std::string(e.what()) : origin + ": " + e.what());
  }
}

ChatTemplate ChatTemplate::for_model(const std::string& model_template, const std::string& architecture) {
  if (!model_template.empty()) return ChatTemplate(model_template, "the model's chat template");
  const std::string builtin = builtin_chat_template(architecture);
  if (!builtin.empty()) return ChatTemplate(builtin, "built-in chat template for " + architecture);
  return ChatTemplate(builtin_chat_template(""), "built-in plain chat template");
}

ChatTemplate ChatTemplate::from_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  check(f.good(), "cannot read chat template file '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ChatTemplate(ss.str(), path);
}

namespace {

Value message_value(const ChatMessage& m, bool parts_as_list) {
  Dict d;
  d.set(Value::text("role"), Value::text(m.role));
  if (m.content_null) {
    d.set(Value::text("content"), Value::none());
  } else if (parts_as_list && !m.parts.empty()) {
    List parts;
    for (const std::string& p : m.parts) {
      Dict part;
      part.set(Value::text("type"), Value::text("text"));
      part.set(Value::text("text"), Value::string(Str::literal(p)));
      parts.push_back(Value::make_dict(std::move(part)));
    }
    d.set(Value::text("content"), Value::make_list(std::move(parts)));
  } else {
    d.set(Value::text("content"), Value::string(Str::literal(m.content)));
  }
  if (!m.extra_json.empty()) {
    const Value extra = jinja::from_json(m.extra_json, true);
    check(extra.is_dict(), "message fields must be a JSON object");
    for (const auto& [k, v] : extra.dict->items)
      if (k.s() != "role" && k.s() != "content") d.set(Value::text(k.s()), v);
  }
  return Value::make_dict(std::move(d));
}

}  // namespace

ChatPrompt ChatTemplate::render(const std::vector<ChatMessage>& messages, const ChatOptions& opts) const {
  std::unordered_map<std::string, Value> vars;
  if (!opts.kwargs_json.empty()) {
    const Value kw = jinja::from_json(opts.kwargs_json, false);
    check(kw.is_dict(), "chat template arguments must be a JSON object");
    for (const auto& [k, v] : kw.dict->items) vars[k.s()] = v;
  }
  const bool parts_as_list = t_->mentions("text");
  List msgs;
  for (const ChatMessage& m : messages) msgs.push_back(message_value(m, parts_as_list));
  vars["messages"] = Value::make_list(std::move(msgs));
  vars["add_generation_prompt"] = Value::boolean(opts.add_generation_prompt);
  vars["tools"] = opts.tools_json.empty() ? Value::none() : jinja::from_json(opts.tools_json, true);
  vars["documents"] = Value::none();
  vars["bos_token"] = Value::text(opts.bos_token);
  vars["eos_token"] = Value::text(opts.eos_token);
  Str out = t_->render(std::move(vars), jinja::Limits{}, opts.clock);
  return ChatPrompt{std::move(out.s), std::move(out.lit)};
}

std::vector<int32_t> encode_chat(const Tokenizer& tok, const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                                 ChatOptions opts, bool add_bos) {
  if (opts.bos_token.empty() && tok.bos() >= 0) opts.bos_token = tok.piece(tok.bos());
  if (opts.eos_token.empty() && tok.eos() >= 0) opts.eos_token = tok.piece(tok.eos());
  ChatPrompt p = tmpl.render(messages, opts);
  // Templates that print bos_token themselves (Llama 3, Mistral, Gemma) would get a second BOS.
  const std::string& bos = opts.bos_token;
  if (add_bos && tok.bos() >= 0 && !bos.empty() && p.text.compare(0, bos.size(), bos) == 0 &&
      (p.content.empty() || p.content[0].begin >= bos.size())) {
    p.text.erase(0, bos.size());
    for (TextRange& r : p.content) r.begin -= bos.size(), r.end -= bos.size();
  }
  return tok.encode(p.text, add_bos, true, p.content);
}

// The string-template entry points: parse on every call (tests, tools that render once).
ChatPrompt render_chat(const std::string& tmpl, const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  ChatOptions o;
  o.add_generation_prompt = add_generation_prompt;
  return ChatTemplate::for_model(tmpl, "").render(messages, o);
}

std::string apply_chat_template(const std::string& tmpl, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) {
  return render_chat(tmpl, messages, add_generation_prompt).text;
}

std::vector<int32_t> encode_chat(const Tokenizer& tok, const std::string& tmpl, const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt, bool add_bos) {
  ChatOptions o;
  o.add_generation_prompt = add_generation_prompt;
  return encode_chat(tok, ChatTemplate::for_model(tmpl, ""), messages, o, add_bos);
}

}  // namespace tinfer

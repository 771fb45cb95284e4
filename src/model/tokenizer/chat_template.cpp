// apply_chat_template: recognises the template family from tokenizer.chat_template text (ChatML,
// Llama-2 [INST]) and renders it directly, without a Jinja interpreter; plain fallback otherwise.
// Rendering records where each message's content lies, so that encode_chat can parse special tokens
// in the template's text only: a user writing "<|im_end|>" gets those characters, not a forged turn.
#include <string>

#include "model/tokenizer/tokenizer.h"

namespace tinfer {
namespace {

// Appends template text and message contents, remembering the contents' ranges.
struct Renderer {
  ChatPrompt p;
  Renderer& operator<<(const std::string& template_text) {
    p.text += template_text;
    return *this;
  }
  Renderer& content(const std::string& c) {
    if (!c.empty()) p.content.push_back({p.text.size(), p.text.size() + c.size()});
    p.text += c;
    return *this;
  }
};

// Reads a Jinja string-literal body: "\n" escapes become newlines, "\'" quotes; stops at `end`.
std::string unescape_until(const std::string& s, size_t pos, const std::string& end) {
  const size_t stop = s.find(end, pos);
  if (stop == std::string::npos) return {};
  std::string out;
  for (size_t i = pos; i < stop; ++i) {
    if (s[i] == '\\' && i + 1 < stop) {
      const char c = s[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

// ChatML templates that inject a default system turn when the conversation has none (SmolLM2,
// Qwen) spell it as a literal '<|im_start|>system\n...<|im_end|>' guarded by a role check.
std::string default_system_prompt(const std::string& tmpl) {
  const bool guarded = tmpl.find("!= 'system'") != std::string::npos || tmpl.find("!= \"system\"") != std::string::npos;
  if (!guarded) return {};
  const std::string head = "<|im_start|>system";
  for (size_t at = tmpl.find(head); at != std::string::npos; at = tmpl.find(head, at + 1)) {
    size_t p = at + head.size();
    if (tmpl.compare(p, 1, "\n") == 0) p += 1;
    else if (tmpl.compare(p, 2, "\\n") == 0) p += 2;
    else continue;
    // Skip the form that prints the caller's system message (an expression follows, not text).
    const std::string body = unescape_until(tmpl, p, "<|im_end|>");
    if (!body.empty() && body.find('\'') == std::string::npos && body.find('+') == std::string::npos) return body;
  }
  return {};
}

// The default system prompt comes from the template itself, so it is template text.
ChatPrompt chatml(const std::string& tmpl, const std::vector<ChatMessage>& msgs, bool gen) {
  Renderer out;
  const std::string sys = default_system_prompt(tmpl);
  if (!sys.empty() && (msgs.empty() ? false : msgs[0].role != "system"))
    out << "<|im_start|>system\n" + sys + "<|im_end|>\n";
  for (const auto& m : msgs) {
    out << "<|im_start|>" + m.role + "\n";
    out.content(m.content) << "<|im_end|>\n";
  }
  if (gen) out << "<|im_start|>assistant\n";
  return out.p;
}

// Llama-2 chat: "<s>[INST] <<SYS>>\n{sys}\n<</SYS>>\n\n{user} [/INST] {answer} </s>" per exchange.
ChatPrompt llama2(const std::vector<ChatMessage>& msgs) {
  Renderer out;
  std::string sys;
  bool first_user = true;
  for (const auto& m : msgs) {
    if (m.role == "system") {
      sys = m.content;
    } else if (m.role == "user") {
      out << "<s>[INST] ";
      if (first_user && !sys.empty()) {
        out << "<<SYS>>\n";
        out.content(sys) << "\n<</SYS>>\n\n";
      }
      out.content(m.content) << " [/INST]";
      first_user = false;
    } else {
      out << " ";
      out.content(m.content) << " </s>";
    }
  }
  return out.p;
}

ChatPrompt plain(const std::vector<ChatMessage>& msgs, bool gen) {
  Renderer out;
  for (const auto& m : msgs) {
    out << m.role + ": ";
    out.content(m.content) << "\n";
  }
  if (gen) out << "assistant:";
  return out.p;
}

}  // namespace

ChatPrompt render_chat(const std::string& tmpl, const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  if (tmpl.find("<|im_start|>") != std::string::npos) return chatml(tmpl, messages, add_generation_prompt);
  if (tmpl.find("[INST]") != std::string::npos) return llama2(messages);
  return plain(messages, add_generation_prompt);
}

std::string apply_chat_template(const std::string& tmpl, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) {
  return render_chat(tmpl, messages, add_generation_prompt).text;
}

std::vector<int32_t> encode_chat(const Tokenizer& tok, const std::string& tmpl, const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt, bool add_bos) {
  const ChatPrompt p = render_chat(tmpl, messages, add_generation_prompt);
  return tok.encode(p.text, add_bos, true, p.content);
}

}  // namespace tinfer

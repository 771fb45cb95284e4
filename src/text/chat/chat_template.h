// Chat templates: the model's own Jinja template (tokenizer.chat_template), or a --chat-template
// file, or a built-in one for its architecture, parsed once when the model is loaded and rendered
// per request by the interpreter in jinja/. Rendering keeps track of which bytes came from the
// caller (message contents, tool definitions and calls), so encode_chat parses special tokens in the
// template's own text only.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace tinfer {

namespace jinja {
class Template;
}

struct ChatOptions {
  bool add_generation_prompt = true;
  std::string tools_json;             // JSON array of tool definitions; "" = none (`tools` is None)
  std::string bos_token, eos_token;   // encode_chat fills them from the tokenizer when empty
  std::string kwargs_json;            // JSON object of further variables (e.g. {"enable_thinking": false})
  std::function<std::string(const std::string&)> clock;  // strftime_now; the local time when empty
};

class ChatTemplate {
 public:
  // Parses `source` now: anything outside the supported Jinja subset throws Error naming the
  // construct and its line. `origin` names the template in that message (file, model).
  explicit ChatTemplate(const std::string& source, const std::string& origin = "chat template");
  // The model's template, else the built-in one for its GGUF architecture (general.architecture),
  // else plain "role: content" lines.
  static ChatTemplate for_model(const std::string& model_template, const std::string& architecture);
  static ChatTemplate from_file(const std::string& path);  // --chat-template FILE

  ChatPrompt render(const std::vector<ChatMessage>& messages, const ChatOptions& opts) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const jinja::Template> t_;
};

// The template written for an architecture whose files ship none ("" when there is none).
std::string builtin_chat_template(const std::string& architecture);

// Token ids of the rendered prompt; a BOS the template itself prints is dropped when add_bos adds one.
std::vector<int32_t> encode_chat(const Tokenizer& tok, const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                                 ChatOptions opts, bool add_bos);

}  // namespace tinfer

#include "cli/chat_flags.h"

#include "cli/common.h"

namespace tinfer::cli {

OptionSpec chat_template_option() {
  return {"--chat-template", "Jinja chat template file, instead of the model's own", true, ""};
}

ChatTemplate chat_template(const Args& args, const Model& model) {
  if (args.has("--chat-template") && !args.str("--chat-template").empty())
    return ChatTemplate::from_file(args.str("--chat-template"));
  return ChatTemplate::for_model(model.chat_template(), model.gguf().get_string("general.architecture").value_or(""));
}

std::vector<int32_t> chat_prompt(const Tokenizer& tok, const ChatTemplate& tmpl, const std::string& text) {
  std::vector<ChatMessage> msgs(1);
  msgs[0].role = "user";
  msgs[0].content = text;
  return encode_chat(tok, tmpl, msgs, ChatOptions{}, tok.add_bos_by_default() && tok.bos() >= 0);
}

std::vector<int32_t> chat_prompt(const Args& args, const Model& model, const std::string& text) {
  return chat_prompt(model.tokenizer(), chat_template(args, model), text);
}

std::vector<int32_t> prompt_tokens(const Args& args, const Model& model) {
  return args.flag("--chat") ? chat_prompt(args, model, args.str("--prompt"))
                             : encode_prompt(model.tokenizer(), args.str("--prompt"));
}

}  // namespace tinfer::cli

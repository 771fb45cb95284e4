#include "chat_flags.h"

namespace tinfer::cli {

OptionSpec chat_template_option() {
  return {"--chat-template", "Jinja chat template file, instead of the model's own", true, ""};
}

ChatTemplate chat_template(const Args& args, const Model& model) {
  if (args.has("--chat-template") && !args.str("--chat-template").empty())
    return ChatTemplate::from_file(args.str("--chat-template"));
  return ChatTemplate::for_model(model.chat_template(), model.gguf().get_string("general.architecture").value_or(""));
}

}  // namespace tinfer::cli

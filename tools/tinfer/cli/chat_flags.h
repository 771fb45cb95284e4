// --chat-template FILE for every command that renders a chat prompt, and the template a command
// uses: the file, else the model's own, else the built-in one for its architecture. Parsed here, when
// the command starts, so an unsupported template is an error before any work (naming line and construct).
#pragma once
#include "cli/args.h"
#include "model/model.h"
#include "text/chat/chat_template.h"

namespace tinfer::cli {

OptionSpec chat_template_option();
ChatTemplate chat_template(const Args& args, const Model& model);
// `text` as one user turn, encoded with the template (BOS as the tokenizer adds it).
std::vector<int32_t> chat_prompt(const Tokenizer& tok, const ChatTemplate& tmpl, const std::string& text);
std::vector<int32_t> chat_prompt(const Args& args, const Model& model, const std::string& text);
// --prompt as `run` reads it: one user turn through the template with --chat, else plain text.
std::vector<int32_t> prompt_tokens(const Args& args, const Model& model);

}  // namespace tinfer::cli

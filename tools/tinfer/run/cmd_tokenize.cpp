// tinfer tokenize: print the token ids and pieces of a text (optionally rendered as a chat turn).
#include <cstdio>

#include "cli/chat_flags.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"

namespace tinfer::cli {

int cmd_tokenize(int argc, char** argv) {
  Args args(argc, argv,
            {{"-m,--model", "model file or a known name", true, "", false, true},
             {"--tokenizer", "tokenizer for llama2.c .bin models"},
             {"-p,--prompt", "text", true, ""},
             {"--chat", "render the text as a user message with the chat template", false},
             {"--special", "map special-token texts to their ids", false},
             {"--bos", "prepend BOS", false},
             chat_template_option()},
            "tinfer tokenize -m MODEL -p TEXT [--chat [--chat-template FILE]] [--special] [--bos]");
  check(args.has("--model"), "missing -m MODEL");
  ModelLoadOptions opts;
  opts.tokenizer_path = args.str("--tokenizer");
  auto model = Model::load(args.str("--model"), opts);
  const Tokenizer& tok = model->tokenizer();
  ChatPrompt p{args.str("--prompt"), {}};
  if (args.flag("--chat")) {
    ChatOptions o;
    if (tok.bos() >= 0) o.bos_token = tok.piece(tok.bos());
    if (tok.eos() >= 0) o.eos_token = tok.piece(tok.eos());
    p = chat_template(args, *model).render({{"user", p.text}}, o);
  }
  // --chat parses the template's special tokens but never the message's, unless --special asks for both.
  if (args.flag("--special")) p.content.clear();
  auto ids = tok.encode(p.text, args.flag("--bos"), args.flag("--special") || args.flag("--chat"), p.content);
  for (int32_t id : ids) std::printf("%6d  '%s'\n", id, tok.token_bytes(id, true).c_str());
  std::printf("%zu tokens\n", ids.size());
  return 0;
}

}  // namespace tinfer::cli

// tinfer chat: an interactive terminal chat using the model's chat template, tokens streamed as
// they come. The KV cache keeps the conversation: each turn re-renders the template, keeps the
// longest common token prefix already in the cache and feeds only the rest.
#include <cstdio>
#include <iostream>

#include "cli/chat_flags.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "engine/generate.h"
#include "engine/text_stream.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer::cli {

int cmd_chat(int argc, char** argv) {
  auto spec = concat(concat(model_options(), sampling_options()),
                     {{"-n,--n-predict", "max tokens per answer", true, "512"},
                      {"--system", "system prompt (default: the template's)", true, ""},
                      chat_template_option()});
  Args args(argc, argv, spec, "tinfer chat -m MODEL");
  SamplingParams sp = sampling_params(args);
  Loaded l = load_model(args);
  const Tokenizer& tok = l.model->tokenizer();
  const ChatTemplate tmpl = chat_template(args, *l.model);
  Session session(*l.backend, context_length(args, *l.model));
  std::vector<ChatMessage> history;
  if (!args.str("--system").empty()) history.push_back({"system", args.str("--system")});
  std::fprintf(stderr, "tinfer chat: %s. Type a message; Ctrl-D or /exit ends.\n", l.model->config().name.c_str());
  for (int turn = 0;; ++turn) {
    std::fprintf(stderr, "> ");
    std::string line;
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line.empty()) continue;
    history.push_back({"user", line});
    const bool bos = tok.add_bos_by_default() && tok.bos() >= 0;
    std::vector<int32_t> toks = encode_chat(tok, tmpl, history, ChatOptions{}, bos);
    const int64_t answer_room = args.integer("-n");
    while (int64_t(toks.size()) + answer_room > session.max_ctx() && history.size() > 1) {
      history.erase(history.begin());  // drop the oldest turns until the new one fits
      toks = encode_chat(tok, tmpl, history, ChatOptions{}, bos);
    }
    size_t common = 0;
    const auto& cached = session.tokens();
    while (common < cached.size() && common < toks.size() && cached[common] == toks[common]) ++common;
    if (common == toks.size()) --common;  // at least one token must be fed to get logits
    session.truncate(int64_t(common));
    GenerateOptions opts;
    opts.max_tokens = answer_room;
    opts.sampling = sp;
    if (sp.seed) opts.sampling.seed = *sp.seed + static_cast<uint64_t>(turn);
    std::string answer;
    TextStream text_out(tok, false);  // the reply follows the chat template, never BOS alone
    GenerateStats st = generate(session, tok, std::vector<int32_t>(toks.begin() + common, toks.end()), opts,
                                [&](int32_t t) {
                                  std::string bytes = text_out.piece(t);
                                  answer += bytes;
                                  std::string s = text_out.assemble(bytes);
                                  std::fwrite(s.data(), 1, s.size(), stdout);
                                  std::fflush(stdout);
                                  return true;
                                });
    std::string rest = text_out.flush();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::printf("\n");
    std::fflush(stdout);
    history.push_back({"assistant", answer});
    std::fprintf(stderr, "[%lld prompt tokens (%zu reused), %lld generated, %.1f tok/s]\n", (long long)st.prompt_tokens,
                 common, (long long)st.generated, st.decode_tok_s());
  }
  return 0;
}

}  // namespace tinfer::cli

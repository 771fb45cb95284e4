// tinfer run: print only the generated continuation to stdout; timings to stderr. Plain runs decode through a
// batch-1 Session; --beams and --spec go through the serving Engine (run_beams.h, run_spec.h).
#include <cstdio>

#include "cli/chat_flags.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "core/isa.h"
#include "engine/generate.h"
#include "engine/text_stream.h"
#include "cli/exit_flags.h"
#include "cli/kv_flags.h"
#include "text/tokenizer/tokenizer.h"
#include "run/run_beams.h"
#include "run/run_spec.h"
#include "cli/spec_flags.h"

namespace tinfer::cli {

int cmd_run(int argc, char** argv) {
  auto spec = concat(concat(model_options(), sampling_options()),
                     {{"-p,--prompt", "prompt text (empty: start from BOS)", true, ""},
                      {"-n,--n-predict", "tokens to generate", true, "128"},
                      {"--chat", "wrap the prompt as a user message in the chat template", false},
                      {"--ignore-eos", "keep generating past end-of-generation tokens", false},
                      chat_template_option()});
  spec = concat(concat(concat(spec, kv_type_options()), early_exit_options()), beam_options());
  spec = concat(spec, spec_options());
  Args args(argc, argv, spec,
            "tinfer run -m MODEL -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P] [--seed S] [--chat [--chat-template FILE]] "
            "[--kv-dtype T | --kv-plan FILE] [--beams N [--length-penalty X] [--early-stopping]] "
            "[--spec ngram|draft|self [--draft-model F] [--spec-self-layers L] [--spec-tokens K]]");
  SamplingParams sp = sampling_params(args);
  long long n = args.integer("-n");
  check(n >= 0, "-n must be >= 0");
  if (spec_requested(args)) return run_speculative(args, sp, int(n));
  if (args.has("--beams")) return run_beam_search(args, sp, int(n));
  Loaded l = load_model(args);
  const ModelConfig& mc = l.model->config();
  const KvPrecision kv = kv_precision(args, *l.backend, l.model->tokenizer());
  std::fprintf(stderr, "KV cache: %s, %lld bytes/token\n", kv.describe().c_str(),
               (long long)kv.bytes_per_token(mc.n_kv_heads, mc.head_dim));
  const Tokenizer& tok = l.model->tokenizer();
  std::vector<int32_t> prompt = args.flag("--chat") ? chat_prompt(args, *l.model, args.str("--prompt"))
                                                    : encode_prompt(tok, args.str("--prompt"));
  Session session(*l.backend, context_length(args, *l.model), kv);
  GenerateOptions opts;
  opts.max_tokens = n;
  opts.sampling = sp;
  opts.stop_at_eog = !args.flag("--ignore-eos");
  TextStream text_out(tok, prompt_is_bos_only(tok, prompt));
  GenerateStats st = generate(session, tok, prompt, opts, [&](int32_t t) {
    std::string s = text_out.push(t);
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  std::string rest = text_out.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fprintf(stderr, "\nload %.2f s | prefill %lld tokens %.1f tok/s | decode %lld tokens %.1f tok/s | isa %s, %d threads\n",
               l.load_s, (long long)st.prompt_tokens, st.prefill_tok_s(), (long long)st.generated, st.decode_tok_s(),
               isa_name(active_isa()), l.pool->size());
  return 0;
}

}  // namespace tinfer::cli

// The --spec option table and its mapping onto SpecConfig.
#include "cli/spec_flags.h"

namespace tinfer::cli {

std::vector<OptionSpec> spec_options() {
  return {
      {"--spec", "speculative decoding: none|ngram|draft|self", true, "none"},
      {"--spec-tokens", "K: most draft tokens per request per step", true, "4"},
      {"--spec-adaptive", "on|off: K per request from its acceptance and the batch", true, "on"},
      {"--spec-disable-batch", "no drafting while this many requests decode (0 = never)", true, "4"},
      {"--spec-row-cost", "adaptive K's prior price of a verify row (fraction of a 1-row step; then measured)", true,
       "0.15"},
      {"--spec-ngram-max", "ngram: longest match tried (1..8)", true, "3"},
      {"--draft-model", "draft: GGUF with the target's tokenizer (see tinfer derive)", true, "", false, true},
      {"--spec-self-layers", "self: the target's first L layers draft", true, "0"},
  };
}

void parse_spec(const Args& args, SpecConfig& s, std::vector<std::string>& errs) {
  if (auto m = parse_spec_mode(args.str("--spec")))
    s.mode = *m;
  else
    errs.push_back("--spec must be none, ngram, draft or self, got '" + args.str("--spec") + "'");
  s.num_tokens = static_cast<int>(args.integer("--spec-tokens"));
  const std::string adaptive = args.str("--spec-adaptive");
  if (adaptive != "on" && adaptive != "off") errs.push_back("--spec-adaptive must be on or off, got '" + adaptive + "'");
  s.adaptive = adaptive == "on";
  s.disable_batch = static_cast<int>(args.integer("--spec-disable-batch"));
  s.row_cost = args.number("--spec-row-cost");
  s.ngram_max = static_cast<int>(args.integer("--spec-ngram-max"));
  s.draft_model = args.str("--draft-model");
  s.self_layers = static_cast<int>(args.integer("--spec-self-layers"));
}

}  // namespace tinfer::cli

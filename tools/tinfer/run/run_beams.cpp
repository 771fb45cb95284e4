// run_beam_search: one beam-search request through an in-process Engine, results printed when it ends.
#include "run/run_beams.h"

#include <cstdio>
#include <vector>

#include <tinfer/engine.h>

#include "cli/quantize_flags.h"
#include "cli/chat_flags.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "core/timer.h"
#include "engine/text_stream.h"
#include "cli/kv_flags.h"
#include "model/model.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer::cli {

std::vector<OptionSpec> beam_options() {
  return {{"--beams", "beam search with N beams through the serving engine (temperature forced to 0)"},
          {"--length-penalty", "beam search: score = logprob / length^X", true, "1.0"},
          {"--early-stopping", "beam search: stop once N hypotheses are finished", false}};
}

int run_beam_search(const Args& args, SamplingParams sampling, int max_tokens) {
  const long long width = args.integer("--beams");
  check(width >= 1 && width <= 64, "--beams must be in [1, 64]");
  EngineConfig cfg;
  cfg.model_path = args.str("--model");
  cfg.tokenizer_path = args.str("--tokenizer");
  cfg.model_transform = quantize_on_load_transform(args);
  cfg.threads = int(args.integer("--threads"));
  if (args.has("--ctx")) cfg.scheduler.max_model_len = int(args.integer("--ctx"));
  cfg.scheduler.max_seqs = int(width);
  cfg.verbose = false;
  std::vector<std::string> errs;
  parse_kv_types(args, cfg, errs);
  if (!errs.empty()) {
    std::string msg = "invalid options:";
    for (const auto& e : errs) msg += "\n  " + e;
    fail(msg);
  }
  const double t0 = now_s();
  auto engine = Engine::create(cfg);
  const double load_s = now_s() - t0;
  const Tokenizer& tok = engine->tokenizer();
  const std::vector<int32_t> prompt = prompt_tokens(args, engine->model());
  GenerationRequest g{.prompt = prompt, .sampling = sampling};
  g.sampling.temperature = 0;
  g.max_tokens = max_tokens;
  g.ignore_eos = args.flag("--ignore-eos");
  g.use_beam_search = true;
  g.n = int(width);
  g.length_penalty = float(args.number("--length-penalty"));
  g.early_stopping = args.flag("--early-stopping");
  struct Hyp {
    std::vector<Token> tokens;
    double score = 0, logprob = 0;
    std::string reason;
  };
  std::vector<Hyp> hyps(static_cast<size_t>(width));
  const double t1 = now_s();
  engine->add_request(std::move(g), [&](const TokenEvent& ev) {
    Hyp& h = hyps.at(size_t(ev.index));
    if (ev.has_token) h.tokens.push_back(ev.token), h.score = ev.beam_score, h.logprob = ev.beam_logprob;
    if (ev.finished) h.reason = finish_reason_name(ev.finish_reason);
  });
  while (engine->has_work()) engine->step();
  const double run_s = now_s() - t1;
  const auto text = [&](const std::vector<Token>& t) {
    TextStream s(tok, prompt_is_bos_only(tok, prompt));
    std::string out;
    for (Token x : t) out += s.push(x);
    return out + s.flush();
  };
  const std::string best = text(hyps[0].tokens);
  std::fwrite(best.data(), 1, best.size(), stdout);
  std::fflush(stdout);
  std::fprintf(stderr, "\n");
  for (size_t k = 0; k < hyps.size(); ++k)
    std::fprintf(stderr, "beam %zu: score %.4f logprob %.4f, %zu tokens (%s): %s\n", k, hyps[k].score,
                 hyps[k].logprob, hyps[k].tokens.size(), hyps[k].reason.c_str(), text(hyps[k].tokens).c_str());
  const EngineStats st = engine->stats();
  std::fprintf(stderr, "load %.2f s | beam search %.2f s, %lld positions computed, peak KV %d blocks\n", load_s,
               run_s, (long long)st.computed_tokens, st.kv_blocks_peak);
  return 0;
}

}  // namespace tinfer::cli

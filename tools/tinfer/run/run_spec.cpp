// run_speculative: one request through an in-process Engine with a drafter, its text streamed as it commits.
#include "run/run_spec.h"

#include <cstdio>
#include <vector>

#include <tinfer/engine.h>

#include "cli/quantize_flags.h"
#include "cli/chat_flags.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "core/timer.h"
#include "engine/text_stream.h"
#include "cli/exit_flags.h"
#include "cli/kv_flags.h"
#include "model/model.h"
#include "text/tokenizer/tokenizer.h"
#include "cli/spec_flags.h"
#include "bench/spec_tally.h"

namespace tinfer::cli {

namespace {

// The engine of one request: run's model, context (-c, else min(trained, 4096)), KV types and early exit, and
// the --spec options; max_seqs 1 so the KV budget is one sequence's.
std::unique_ptr<Engine> spec_engine(const Args& args) {
  EngineConfig cfg;
  cfg.model_path = args.str("--model");
  cfg.tokenizer_path = args.str("--tokenizer");
  cfg.model_transform = quantize_on_load_transform(args);
  cfg.threads = int(args.integer("--threads"));
  cfg.scheduler.max_seqs = 1;
  cfg.verbose = false;
  std::vector<std::string> errs;
  parse_kv_types(args, cfg, errs);
  parse_spec(args, cfg.spec, errs);
  try {
    cfg.plans.early_exit = early_exit(args);
  } catch (const Error& e) {
    errs.push_back(e.what());
  }
  for (auto& e : cfg.validate()) errs.push_back(std::move(e));
  if (!errs.empty()) {
    std::string msg = "invalid options:";
    for (const auto& e : errs) msg += "\n  " + e;
    fail(msg);
  }
  auto model = Model::load(cfg.model_path, ModelLoadOptions{.tokenizer_path = cfg.tokenizer_path});
  if (cfg.model_transform) model = cfg.model_transform(std::move(model));
  cfg.scheduler.max_model_len = int(context_length(args, *model));
  return Engine::create(std::move(model), cfg);
}

}  // namespace

bool spec_requested(const Args& args) { return args.has("--spec") && args.str("--spec") != "none"; }

int run_speculative(const Args& args, const SamplingParams& sampling, int max_tokens) {
  check(!args.has("--beams"), "--spec and --beams are alternatives (beam search does not draft)");
  const double t0 = now_s();
  auto engine = spec_engine(args);
  const double load_s = now_s() - t0;
  const Tokenizer& tok = engine->tokenizer();
  const std::vector<int32_t> prompt = prompt_tokens(args, engine->model());
  GenerationRequest g{.prompt = prompt, .sampling = sampling};
  g.max_tokens = max_tokens;
  g.ignore_eos = args.flag("--ignore-eos");
  TextStream text_out(tok, prompt_is_bos_only(tok, prompt));
  int64_t generated = 0;
  const double t1 = now_s();
  engine->add_request(std::move(g), [&](const TokenEvent& ev) {
    if (!ev.has_token) return;
    ++generated;
    const std::string s = text_out.push(ev.token);
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  });
  while (engine->has_work()) engine->step();
  const double run_s = now_s() - t1;
  const std::string rest = text_out.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fprintf(stderr, "\nload %.2f s | %zu prompt tokens, %lld generated in %.2f s (%.1f tok/s) | spec %s: %s; "
               "measured verify-row cost %.3f of a one-row step\n",
               load_s, prompt.size(), (long long)generated, run_s, run_s > 0 ? double(generated) / run_s : 0.0,
               spec_mode_name(engine->config().spec.mode), SpecTally::of(*engine).describe().c_str(),
               engine->stats().spec_row_cost);
  return 0;
}

}  // namespace tinfer::cli

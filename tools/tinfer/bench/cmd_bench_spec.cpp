// tinfer bench spec: batch-1 decode with speculative decoding against without, side by side in one process.
// Each prompt (a file of `%`-separated entries, optionally wrapped in the model's chat template) runs through
// one engine per mode, modes interleaved prompt by prompt and repeat by repeat (the host is noisy and
// bimodal), greedy, up to --gen tokens or end of generation. Per mode: decode tokens/s (tokens after the first
// over the time from the first to the last), speed-up over none, acceptance, tokens committed per verify step,
// time in draft vs forward (verify); and whether every mode's text equals none's (it must: greedy
// speculative decoding is exact). --json: one object on the last line.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_workload.h"
#include "cli/chat_flags.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "core/timer.h"
#include "cli/engine_flags.h"
#include "model/model.h"
#include "text/tokenizer/tokenizer.h"
#include "bench/spec_tally.h"

namespace tinfer::cli {

namespace {

struct ModeRun {
  SpecMode mode;
  std::unique_ptr<Engine> engine;
  double decode_s = 0;
  int64_t decode_tokens = 0;
  SpecTally spec;  // drafts, acceptance, draft vs forward seconds
  std::vector<double> per_repeat_tok_s;  // decode tok/s of each whole repeat (all prompts)
  std::vector<std::vector<Token>> outputs;  // of the last repeat, per prompt
};

// One greedy request alone in the engine; returns its tokens and adds its decode time and counters to m.
std::vector<Token> run_one(ModeRun& m, const std::vector<Token>& prompt, int gen, double* decode_s,
                           int64_t* decode_tokens) {
  const SpecTally t0 = SpecTally::of(*m.engine);
  GenerationRequest g;
  g.prompt = prompt;
  g.sampling.temperature = 0;
  g.max_tokens = gen;
  std::vector<Token> out;
  double t_first = 0, t_last = 0;
  m.engine->add_request(std::move(g), [&](const TokenEvent& ev) {
    if (!ev.has_token) return;
    out.push_back(ev.token);
    t_last = now_s();
    if (out.size() == 1) t_first = t_last;
  });
  while (m.engine->has_work()) m.engine->step();
  m.spec += SpecTally::of(*m.engine) - t0;
  if (out.size() >= 2) {
    *decode_s += t_last - t_first;
    *decode_tokens += static_cast<int64_t>(out.size()) - 1;
  }
  return out;
}

std::vector<SpecMode> parse_modes(const std::string& s) {
  std::vector<SpecMode> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    auto m = parse_spec_mode(item);
    check(m.has_value(), "--modes: '" + item + "' is not none, ngram, draft or self");
    v.push_back(*m);
  }
  check(!v.empty() && v[0] == SpecMode::kNone, "--modes must start with none (the reference)");
  return v;
}

std::vector<OptionSpec> bench_spec_options() {
  return concat(concat(model_options(), engine_options()),
                {{"--prompts", "prompt file: entries separated by lines holding only %"},
                 {"--chat", "wrap each entry in the model's chat template as a user turn", false},
                 {"--modes", "comma-separated, none first", true, "none,ngram"},
                 {"--gen", "most generated tokens per prompt (greedy; end of generation stops earlier)", true, "128"},
                 {"--repeat", "repetitions (modes interleaved; median over repeats)", true, "3"},
                 {"--json", "print one JSON object on the last line", false},
                 chat_template_option()});
}

// One engine per mode, from the same engine flags.
std::vector<ModeRun> make_runs(const EngineConfig& base, const std::string& modes) {
  std::vector<ModeRun> runs;
  for (SpecMode mode : parse_modes(modes)) {
    EngineConfig c = base;
    c.spec.mode = mode;
    if (mode != SpecMode::kDraft) c.spec.draft_model.clear();
    check(mode != SpecMode::kDraft || !c.spec.draft_model.empty(), "--modes draft needs --draft-model FILE");
    check(mode != SpecMode::kSelf || c.spec.self_layers > 0, "--modes self needs --spec-self-layers L");
    runs.push_back(ModeRun{.mode = mode, .engine = Engine::create(c)});
  }
  return runs;
}

std::vector<std::vector<Token>> read_prompts(const Args& args, const Engine& engine) {
  const Tokenizer& tok = engine.tokenizer();
  std::vector<std::vector<Token>> prompts;
  std::optional<ChatTemplate> tmpl;
  if (args.flag("--chat")) tmpl.emplace(chat_template(args, engine.model()));
  for (const std::string& e : read_prompt_file(args.str("--prompts")))
    prompts.push_back(tmpl ? chat_prompt(tok, *tmpl, e) : encode_prompt(tok, e));
  check(!prompts.empty(), "--prompts: no entries");
  return prompts;
}

// Warm-up, then `repeat` rounds, modes interleaved prompt by prompt; the last round's outputs are kept.
void run_rounds(std::vector<ModeRun>& runs, const std::vector<std::vector<Token>>& prompts, int gen, int repeat) {
  for (ModeRun& m : runs) {  // warm-up: one short request per engine (scratch buffers, page faults)
    double s = 0;
    int64_t n = 0;
    run_one(m, prompts[0], 4, &s, &n);
    m.spec = {};
  }
  for (int r = 0; r < repeat; ++r) {
    std::vector<double> s(runs.size(), 0.0);
    std::vector<int64_t> n(runs.size(), 0);
    for (size_t p = 0; p < prompts.size(); ++p)
      for (size_t i = 0; i < runs.size(); ++i) {
        std::vector<Token> out = run_one(runs[i], prompts[p], gen, &s[i], &n[i]);
        if (r == repeat - 1) runs[i].outputs.push_back(std::move(out));
      }
    for (size_t i = 0; i < runs.size(); ++i) {
      runs[i].decode_s += s[i], runs[i].decode_tokens += n[i];
      runs[i].per_repeat_tok_s.push_back(s[i] > 0 ? double(n[i]) / s[i] : 0.0);
    }
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The table, one row per mode, and each mode's JSON object.
nlohmann::json report_modes(std::vector<ModeRun>& runs) {
  const double none_tok_s = median(runs[0].per_repeat_tok_s);
  std::printf("| mode | decode tok/s (median; range) | vs none | acceptance | tokens/verify step | draft s | "
              "forward s | same text as none |\n|---|---|---|---|---|---|---|---|\n");
  nlohmann::json modes = nlohmann::json::array();
  for (ModeRun& m : runs) {
    const double med = median(m.per_repeat_tok_s);
    const auto [lo, hi] = std::minmax_element(m.per_repeat_tok_s.begin(), m.per_repeat_tok_s.end());
    const bool same = m.outputs == runs[0].outputs;
    const double acc = m.spec.acceptance(), per_step = m.spec.tokens_per_verify_step();
    std::printf("| %s | %.1f (%.1f-%.1f) | %.2fx | %.1f%% | %.2f | %.2f | %.2f | %s |\n", spec_mode_name(m.mode), med,
                *lo, *hi, none_tok_s > 0 ? med / none_tok_s : 0.0, 100 * acc, per_step, m.spec.draft_s, m.spec.forward_s,
                same ? "yes" : "NO");
    modes.push_back({{"mode", spec_mode_name(m.mode)},
                     {"decode_tok_s", med},
                     {"decode_tok_s_min", *lo},
                     {"decode_tok_s_max", *hi},
                     {"speedup", none_tok_s > 0 ? med / none_tok_s : 0.0},
                     {"drafted", m.spec.drafted},
                     {"accepted", m.spec.accepted},
                     {"acceptance", acc},
                     {"verify_steps", m.spec.verify_steps},
                     {"tokens_per_verify_step", per_step},
                     {"draft_s", m.spec.draft_s},
                     {"forward_s", m.spec.forward_s},
                     {"decode_tokens", m.decode_tokens},
                     {"same_text_as_none", same},
                     {"row_cost", m.engine->stats().spec_row_cost}});
  }
  return modes;
}

}  // namespace

int cmd_bench_spec(int argc, char** argv) {
  Args args(argc, argv, bench_spec_options(),
            "tinfer bench spec -m MODEL --prompts FILE [--chat] [--modes none,ngram,draft,self] [--draft-model F] "
            "[--spec-self-layers L] [--spec-tokens K] [--gen 128] [--repeat 3] [engine flags] [--json]");
  check(args.has("--prompts"), "missing --prompts FILE\n" + args.help());
  EngineConfig base = engine_config(args);
  base.verbose = false;
  if (!args.has("--kv-memory") && !args.has("--ctx")) base.scheduler.max_model_len = 2048;  // one sequence at a time:
  if (!args.has("--kv-memory")) base.kv.memory_bytes = int64_t(256) << 20;          // a small cache will do
  const int gen = static_cast<int>(args.integer("--gen")), repeat = static_cast<int>(args.integer("--repeat"));
  check(gen >= 2 && repeat >= 1, "--gen >= 2 and --repeat >= 1 are required");

  std::vector<ModeRun> runs = make_runs(base, args.str("--modes"));
  const std::vector<std::vector<Token>> prompts = read_prompts(args, *runs[0].engine);
  run_rounds(runs, prompts, gen, repeat);
  nlohmann::json j;
  j["model"] = base.model_path;
  j["prompts"] = args.str("--prompts");
  j["chat"] = args.flag("--chat");
  j["gen"] = gen;
  j["repeat"] = repeat;
  j["spec_tokens"] = base.spec.num_tokens;
  j["adaptive"] = base.spec.adaptive;
  std::printf("%zu prompts x %d repeats, greedy, up to %d tokens, K = %d (%s), %d threads\n", prompts.size(), repeat,
              gen, base.spec.num_tokens, base.spec.adaptive ? "adaptive" : "fixed", base.threads);
  j["modes"] = report_modes(runs);
  for (const ModeRun& m : runs)
    if (m.mode != SpecMode::kNone)
      std::printf("%s: measured verify-row cost %.3f of a one-row step\n", spec_mode_name(m.mode),
                  m.engine->stats().spec_row_cost);
  if (args.flag("--json")) std::printf("%s\n", j.dump().c_str());
  for (const ModeRun& m : runs)
    check(m.outputs == runs[0].outputs,
          std::string("bench spec: mode ") + spec_mode_name(m.mode) + " gave another text than none (a bug)");
  return 0;
}

}  // namespace tinfer::cli

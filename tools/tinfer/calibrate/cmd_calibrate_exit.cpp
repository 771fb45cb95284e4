// tinfer calibrate-exit: the early-exit threshold chosen by calibration. On a calibration text (default: the slice
// tinfer quantize uses, disjoint from every evaluation slice) scored as teacher-forced decode (one token per step,
// so every token may exit), the model without early exit is the base. For each candidate exit layer (--exit-layers
// fixes one set; by default single exits at several depths), the lowest threshold whose measured quality (mean
// KLD or ΔPPL against the base, with state copying and all) is within the budget is found by bisection on
// -log10(1 - threshold) in [0.3, 4] (threshold 0.5 .. 0.9999; plans/exit_search.h); each found setting's share of
// exiting tokens gives its weight bytes per decode token (plans/exit_cost.h), and the cheapest within budget is
// printed as the flags to use.
// When no setting reads fewer bytes than running every layer, it says so: early exit would slow decode down.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli/calib_text.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "core/timer.h"
#include "plans/exit_cost.h"
#include "plans/exit_search.h"
#include "cli/exit_flags.h"
#include "quality/kv_quality_probe.h"
#include "calibrate/probe_run.h"
#include "quality/quality_budget.h"

namespace tinfer::cli {

using nlohmann::json;

namespace {

struct ExitTrial {
  std::vector<int32_t> layers;
  double threshold = 1;
  bool feasible = false;
  QualitySummary q{};
  EarlyExitCounters counters;
  double bytes = 0;  // predicted weight bytes per decode token
};


// One calibration run: the model, its decode-step probe and the exit cost model.
struct ExitCalibration : ProbeRun {
  ExitCostModel cost;

  ExitCalibration(const Args& args, const QualityBudget& b, std::vector<std::vector<int32_t>>& sets,
                  const CalibText& text, long long calib_tokens)
      : ProbeRun(args, b, {BackendCapability::kEarlyExit}, "calibrate-exit") {
    check(L >= 2, "early exit needs a model of at least 2 layers");
    if (sets.empty()) sets = default_exit_layer_sets(L);
    for (const auto& s : sets) fwd->set_early_exit(EarlyExit{s, 0.5f});  // refuses a layer outside [1, L-1] now
    fwd->set_early_exit(EarlyExit{});
    ctx = calibration_context(args, *l.model);
    calib = calibration_tokens(l.model->tokenizer(), text, calib_tokens);
    probe = std::make_unique<KvQualityProbe>(*fwd, l.pool.get(), calib, ctx, 1);  // the base: every layer, one token per step
    budget.resolve(probe->ppl_base());
    for (int64_t i = 0; i < L; ++i)
      cost.layer_bytes.push_back(double(fwd->layer_bytes(i))), cost.qkv_bytes.push_back(double(fwd->qkv_bytes(i)));
    cost.head_bytes = double(fwd->head_bytes());
    f32 = KvPrecision::uniform(L, KvDtype::f32);
    std::fprintf(stderr, "calibration: %lld tokens of %s one per step, windows of %lld; base PPL %.4f; %.1f s\n",
                 (long long)probe->scored_tokens(), text.label.c_str(), (long long)ctx, probe->ppl_base(), now_s() - t0);
  }

  ExitTrial measure(const std::vector<int32_t>& layers, double t) {
    ExitTrial r{layers, t};
    fwd->set_early_exit(EarlyExit{layers, float(t)});
    const EarlyExitCounters before = fwd->early_exit_counters();
    r.q = probe->measure(f32);
    r.counters = exit_counters_between(before, fwd->early_exit_counters());
    fwd->set_early_exit(EarlyExit{});
    r.feasible = budget.within(r.q);
    r.bytes = cost.mean(layers, r.counters);
    return r;
  }
};

// Per set, the lowest threshold within budget; returns the cheapest (nullptr: none within budget).
const ExitTrial* print_trials(const ExitCalibration& c, const std::vector<ExitTrial>& found) {
  const double full = c.cost.full();
  std::printf("per exit layer set: the lowest threshold within %s %s (teacher-forced decode, state copying)\n",
              c.budget.unit(), c.budget.text.c_str());
  std::printf("| exit after | threshold | tokens exiting | KLD | ΔPPL | top-1 | weight bytes/token vs every layer |\n"
              "|---|---|---|---|---|---|---|\n");
  for (const ExitTrial& t : found) {
    if (!t.feasible) {
      std::printf("| %s | none within budget (0.9999: KLD %.4g, ΔPPL %+.4f) | | | | | |\n", exit_layer_list(t.layers).c_str(),
                  t.q.kl_mean, t.q.dppl);
      continue;
    }
    std::printf("| %s | %.9g | %.1f%% | %.4g | %+.4f (%+.2f%%) | %.2f%% | %.3f |\n", exit_layer_list(t.layers).c_str(),
                double(float(t.threshold)), 100 * t.counters.share(), t.q.kl_mean, t.q.dppl,
                100 * t.q.dppl / c.probe->ppl_base(), 100 * t.q.top1, t.bytes / full);
  }
  return cheapest_within_budget(found);
}

void report_pick(const ExitTrial* pick, double full, json& j) {
  if (!pick) {
    std::printf("result       no exit layer set keeps the budget even at threshold 0.9999\n");
    j["within_budget"] = false;
    return;
  }
  const bool helps = pick->bytes < full;
  std::printf("result       --early-exit %.9g --exit-layers %s: %.1f%% of tokens exit, %.3f of the weight bytes per "
              "decode token%s\n",
              double(float(pick->threshold)), exit_layer_list(pick->layers).c_str(), 100 * pick->counters.share(),
              pick->bytes / full,
              helps ? "" : " -- more than without early exit: it would slow decode down (the exit head costs more "
                           "than the layers it saves)");
  j.update(quality_json(pick->q));
  j["within_budget"] = true;
  j["threshold"] = double(float(pick->threshold));  // the value applied (EarlyExit holds a float)
  j["exit_layers"] = exit_layer_list(pick->layers);
  j["exit_share"] = pick->counters.share();
  j["bytes_ratio"] = pick->bytes / full;
  char thr[32];
  std::snprintf(thr, sizeof thr, "%.9g", double(float(pick->threshold)));
  j["flags"] = std::string("--early-exit ") + thr + " --exit-layers " + exit_layer_list(pick->layers);
}

}  // namespace

int cmd_calibrate_exit(int argc, char** argv) {
  auto spec = concat(concat(model_options(), quality_budget_options("the model without early exit")),
                     {{"--layers", "one exit layer set to calibrate, as --exit-layers takes it (default: single exits at several depths)"},
                      {"--steps", "bisection steps per exit layer set", true, "6"},
                      {"--json", "print one JSON object on the last line", false}});
  spec.push_back(act_quant_option());
  spec = concat(spec, calib_text_options("2048", ", scored one per step"));
  Args args(argc, argv, spec,
            "tinfer calibrate-exit -m MODEL (--budget-kld X | --budget-ppl X[%]) [--calib FILE] [--calib-tokens N] "
            "[--ctx N] [--layers L1,L2] [--steps N] [--json] [-t N]");
  check(args.has("--model"), "missing -m MODEL\n" + args.help());
  const QualityBudget budget = parse_quality_budget(args);
  const long long calib_tokens = args.integer("--calib-tokens"), steps = args.integer("--steps");
  check(calib_tokens >= 2, "--calib-tokens must be at least 2");
  check(steps >= 0 && steps <= 30, "--steps must be in [0, 30]");
  std::vector<std::vector<int32_t>> sets;
  if (args.has("--layers")) sets.push_back(parse_exit_layers(args.str("--layers")));
  const CalibText text = calib_text_of(args);

  ExitCalibration c(args, budget, sets, text, calib_tokens);
  std::vector<ExitTrial> found;
  const bool progress = isatty(2);
  for (const auto& s : sets) {
    found.push_back(lowest_exit_threshold<ExitTrial>([&](double t) { return c.measure(s, t); }, steps));
    if (progress) std::fprintf(stderr, "\rexit after %s: %.0f s   ", exit_layer_list(s).c_str(), now_s() - c.t0);
  }
  if (progress) std::fprintf(stderr, "\n");
  const ExitTrial* pick = print_trials(c, found);
  const double secs = now_s() - c.t0;
  json j = {{"metric", c.budget.metric()}, {"budget", c.budget.value}, {"budget_arg", c.budget.text},
            {"tokens", c.probe->scored_tokens()}, {"ppl_base", c.probe->ppl_base()}, {"seconds", secs},
            {"evaluations", c.probe->evaluations()}};
  report_pick(pick, c.cost.full(), j);
  std::printf("time         %.1f s, %lld evaluations\n", secs, (long long)c.probe->evaluations());
  if (args.flag("--json")) std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace tinfer::cli

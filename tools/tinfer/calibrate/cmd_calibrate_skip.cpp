// tinfer calibrate-skip: a layer-skip plan chosen by calibration. On a calibration text (default: the slice
// tinfer quantize uses, disjoint from every evaluation slice), the model's own logits are the base. Each layer's
// attention and MLP block is measured twice: how much it changes the hidden state (mean over tokens of
// |block output| / |residual stream entering it|), and the quality with that block alone skipped (mean KLD or
// ΔPPL against the base). Then the blocks are combined greedily (plans/skip_search.h: cheapest quality per saved
// weight byte first, each kept only when the whole plan, measured, stays within the budget), and the plan is
// written (plans/skip_plan_file.h) for --skip-plan. The written plan's measured quality is within the budget.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli/calib_text.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "core/timer.h"
#include "quality/kv_quality_probe.h"
#include "model/model_identity.h"
#include "calibrate/probe_run.h"
#include "quality/quality_budget.h"
#include "quantize/calib_stats.h"
#include "plans/skip_plan_file.h"
#include "plans/skip_search.h"

namespace tinfer::cli {

using nlohmann::json;

namespace {

// Mean over tokens of |delta| / |x| for each layer's attention and MLP block, x the residual stream entering the
// block: a block that barely changes the stream is a candidate to skip (the quality measurement decides).
struct BlockChange {
  std::vector<double> attn, mlp;  // [n_layers]
};

BlockChange measure_block_change(Backend& fwd, const std::vector<int32_t>& tokens, int64_t ctx) {
  const int64_t L = fwd.config().n_layers;
  BlockChange r{std::vector<double>(size_t(L)), std::vector<double>(size_t(L))};
  std::vector<float> x;  // [n][dim]: the stream entering the current block
  int64_t rows = 0;
  auto rel = [](const float* d, const float* xi, int64_t dim) {
    double dd = 0, xx = 0;
    for (int64_t k = 0; k < dim; ++k) dd += double(d[k]) * d[k], xx += double(xi[k]) * xi[k];
    return std::sqrt(dd / std::max(xx, 1e-30));
  };
  fwd.set_linear_observer([&](int64_t l, LinearInput which, const float* v, int64_t n, int64_t dim) {
    if (which == LinearInput::kResidual) {
      x.assign(v, v + n * dim);
      if (l == 0) rows += n;
    } else if (which == LinearInput::kAttnDelta || which == LinearInput::kMlpDelta) {
      double& acc = (which == LinearInput::kAttnDelta ? r.attn : r.mlp)[size_t(l)];
      for (int64_t i = 0; i < n; ++i) {
        acc += rel(v + i * dim, &x[size_t(i * dim)], dim);
        for (int64_t k = 0; k < dim; ++k) x[size_t(i * dim + k)] += v[i * dim + k];
      }
    }
  });
  run_calibration_windows(fwd, tokens, int64_t(tokens.size()), ctx, 128);
  fwd.set_linear_observer({});
  for (int64_t l = 0; l < L; ++l) r.attn[size_t(l)] /= double(rows), r.mlp[size_t(l)] /= double(rows);
  return r;
}

std::string default_output(const std::string& model_path) {
  return std::filesystem::path(model_path).stem().string() + ".skip-plan.json";
}

struct SkipCalibOptions {
  QualityBudget budget;
  std::string blocks, out_path;
  bool allow_attn = true, allow_mlp = true, json = false;
  long long calib_tokens = 0, max_evals = 0;
  CalibText text;
};

SkipCalibOptions parse_calibrate_skip(const Args& args) {
  check(args.has("--model"), "missing -m MODEL\n" + args.help());
  SkipCalibOptions o;
  o.budget = parse_quality_budget(args);
  o.blocks = args.str("--blocks");
  check(o.blocks == "attn,mlp" || o.blocks == "mlp,attn" || o.blocks == "mlp" || o.blocks == "attn",
        "--blocks must be attn,mlp, mlp or attn, got '" + o.blocks + "'");
  o.allow_attn = o.blocks.find("attn") != std::string::npos, o.allow_mlp = o.blocks.find("mlp") != std::string::npos;
  o.calib_tokens = args.integer("--calib-tokens"), o.max_evals = args.integer("--max-evals");
  check(o.calib_tokens >= 2, "--calib-tokens must be at least 2");
  check(o.max_evals >= 0 && o.max_evals <= 1000000, "--max-evals must be in [0, 1000000]");
  o.out_path = args.has("--output") ? args.str("--output") : default_output(args.str("--model"));
  o.text = calib_text_of(args);
  o.json = args.flag("--json");
  return o;
}

// One calibration run: the model as it is served, the probe, each block alone, then the greedy plan.
struct SkipCalibration : ProbeRun {
  const SkipCalibOptions& o;
  bool progress = isatty(2);
  BlockChange change;
  size_t full_bytes = 0;
  std::vector<SkipCandidate> cands;
  std::vector<QualitySummary> alone_q;
  json sensitivity = json::array();
  SkipSearchResult found;
  QualitySummary measured{};
  size_t plan_bytes = 0;

  SkipCalibration(const Args& args, const SkipCalibOptions& opts)
      : ProbeRun(args, opts.budget, {BackendCapability::kLayerSkip, BackendCapability::kActivationObserver},
                 "calibrate-skip"),
        o(opts) {
    ctx = calibration_context(args, *l.model);
    calib = calibration_tokens(l.model->tokenizer(), o.text, o.calib_tokens);
    // The base and every measurement run the model as it is served (quantized weights, int8 activations), on an
    // f32 KV cache: the budget is against what --skip-plan changes, nothing else.
    probe = std::make_unique<KvQualityProbe>(*fwd, l.pool.get(), calib, ctx);
    budget.resolve(probe->ppl_base());
    f32 = KvPrecision::uniform(L, KvDtype::f32);
    std::fprintf(stderr, "calibration: %lld tokens of %s, windows of %lld; base PPL %.4f; %.1f s\n",
                 (long long)probe->scored_tokens(), o.text.label.c_str(), (long long)ctx, probe->ppl_base(),
                 now_s() - t0);
    change = measure_block_change(*fwd, calib, ctx);
    full_bytes = fwd->weight_bytes_read();
  }

  QualitySummary measure(const LayerSkip& s) {
    fwd->set_layer_skip(s);
    const QualitySummary q = probe->measure(f32);
    fwd->set_layer_skip(LayerSkip{});
    return q;
  }

  // Each block alone: its quality cost and the weight bytes it saves.
  void measure_alone() {
    for (int64_t layer = 0; layer < L; ++layer) {
      json row = {{"layer", layer}, {"attn_change", change.attn[size_t(layer)]}, {"mlp_change", change.mlp[size_t(layer)]}};
      for (bool mlp : {false, true}) {
        if (mlp ? !o.allow_mlp : !o.allow_attn) continue;
        LayerSkip s = LayerSkip::none(L);
        (mlp ? s.mlp : s.attn)[size_t(layer)] = 1;
        fwd->set_layer_skip(s);
        const double saved = double(full_bytes - fwd->weight_bytes_read());
        const QualitySummary q = measure(s);
        cands.push_back({layer, mlp, std::max(budget.of(q), 0.0), saved});
        alone_q.push_back(q);
        row[mlp ? "mlp" : "attn"] = quality_json(q);
      }
      sensitivity.push_back(row);
      if (progress)
        std::fprintf(stderr, "\rsensitivity: layer %lld/%lld, %.0f s", (long long)layer + 1, (long long)L, now_s() - t0);
    }
    if (progress) std::fprintf(stderr, "\n");
  }

  // Greedy combination; every plan measured whole.
  void combine() {
    bool measured_any = false;
    found = greedy_skip_search(
        L, cands, budget.value,
        [&](const LayerSkip& s) {
          const QualitySummary q = measure(s);
          if (budget.within(q)) measured = q, measured_any = true;
          if (progress) std::fprintf(stderr, "\rcombining: %s, %.0f s        ", s.describe().c_str(), now_s() - t0);
          return std::max(budget.of(q), 0.0);
        },
        int(o.max_evals));
    if (progress) std::fprintf(stderr, "\n");
    if (!measured_any) measured = measure(found.skip);  // the empty plan: the base itself (KLD 0)
    fwd->set_layer_skip(found.skip);
    plan_bytes = fwd->weight_bytes_read();
    fwd->set_layer_skip(LayerSkip{});
  }

  KvPrecision kv_plan() const {  // f16 everywhere but the layers whose attention the plan skips
    KvPrecision p = KvPrecision::uniform(L, KvDtype::f16);
    p.no_kv = found.skip.attn;
    return p;
  }
};

void print_report(const SkipCalibration& c, double secs) {
  const QualityBudget& budget = c.budget;
  const LayerSkip& plan = c.found.skip;
  const ModelConfig& mc = c.l.model->config();
  std::printf("per block: hidden-state change |delta|/|x| and %s vs the base with only that block skipped\n",
              budget.unit());
  std::printf("| layer | attn change | mlp change | attn %s | mlp %s | plan |\n|---|---|---|---|---|---|\n", budget.unit(),
              budget.unit());
  size_t ci = 0;
  for (int64_t layer = 0; layer < c.L; ++layer) {
    std::printf("| %lld | %.4f | %.4f |", (long long)layer, c.change.attn[size_t(layer)], c.change.mlp[size_t(layer)]);
    for (bool mlp : {false, true}) {
      if (ci < c.cands.size() && c.cands[ci].layer == layer && c.cands[ci].mlp == mlp)
        std::printf(" %.4g |", budget.of(c.alone_q[ci++]));
      else
        std::printf(" - |");
    }
    std::printf(" %s |\n", skip_layer_name(plan, layer));
  }
  const int64_t kv_full = KvPrecision::uniform(c.L, KvDtype::f16).bytes_per_token(mc.n_kv_heads, mc.head_dim);
  const KvPrecision kv_plan = c.kv_plan();
  const int64_t kv_kept = kv_plan.bytes_per_token(mc.n_kv_heads, mc.head_dim);
  const QualitySummary& m = c.measured;
  std::printf("plan         %s\n", plan.describe().c_str());
  std::printf("weights      %.2f MiB read per decode step of %.2f MiB (%.1f%% saved)\n", c.plan_bytes / 1048576.0,
              c.full_bytes / 1048576.0, 100.0 * (1.0 - double(c.plan_bytes) / double(c.full_bytes)));
  std::printf("KV           %lld of %lld bytes/token at f16 (%lld of %lld layers hold KV)\n", (long long)kv_kept,
              (long long)kv_full, (long long)kv_plan.layers_with_kv(), (long long)c.L);
  std::printf("measured     KLD mean %.4g, ΔPPL %+.5f (%+.3f%%), top-1 %.2f%% on %lld calibration tokens; budget %s %s%s\n",
              m.kl_mean, m.dppl, 100 * m.dppl / c.probe->ppl_base(), 100 * m.top1, (long long)c.probe->scored_tokens(),
              budget.unit(), budget.text.c_str(), budget.within(m) ? "" : " -- NOT MET");
  std::printf("time         %.1f s, %lld evaluations (%d whole plans)\n", secs, (long long)c.probe->evaluations(),
              c.found.evaluations);
}

SkipPlanFile plan_file(const SkipCalibration& c, double secs) {
  return SkipPlanFile{model_identity(*c.l.model), c.found.skip,
                      {{"metric", c.budget.metric()},
                       {"budget", c.budget.value},
                       {"budget_arg", c.budget.text},
                       {"within_budget", c.budget.within(c.measured)},
                       {"blocks", c.o.blocks},
                       {"measured_on", "model as it runs, f32 KV cache"},
                       {"text", c.o.text.label},
                       {"tokens", c.probe->scored_tokens()},
                       {"ctx", c.ctx},
                       {"ppl_base", c.probe->ppl_base()},
                       {"measured", quality_json(c.measured)},
                       {"weight_bytes_read", c.plan_bytes},
                       {"weight_bytes_full", c.full_bytes},
                       {"kv_layers", c.kv_plan().layers_with_kv()},
                       {"sensitivity", c.sensitivity},
                       {"evaluations", c.probe->evaluations()},
                       {"seconds", secs}}};
}

}  // namespace

int cmd_calibrate_skip(int argc, char** argv) {
  auto spec = concat(concat(model_options(), quality_budget_options("the model with no layer skipped")),
                     {{"--blocks", "sub-blocks that may be skipped: attn,mlp | mlp | attn", true, "attn,mlp"},
                      {"--max-evals", "whole plans measured at most in the greedy combination", true, "64"},
                      {"-o,--output", "plan file to write (default: <model name>.skip-plan.json here)"},
                      {"--json", "print one JSON object on the last line", false}});
  spec.push_back(act_quant_option());
  spec = concat(spec, calib_text_options("1024"));
  Args args(argc, argv, spec,
            "tinfer calibrate-skip -m MODEL (--budget-kld X | --budget-ppl X[%]) [--calib FILE] [--calib-tokens N] "
            "[--ctx N] [--blocks attn,mlp] [--max-evals N] [-o plan.json] [--json] [-t N]");
  const SkipCalibOptions o = parse_calibrate_skip(args);
  SkipCalibration c(args, o);
  c.measure_alone();
  c.combine();
  const double secs = now_s() - c.t0;
  print_report(c, secs);
  const SkipPlanFile file = plan_file(c, secs);
  write_skip_plan(file, o.out_path);
  std::printf("wrote        %s\n", o.out_path.c_str());
  if (o.json) {
    json j = file.calibration;
    j.erase("sensitivity");
    j.update(quality_json(c.measured));
    j["plan"] = o.out_path;
    j["skip"] = c.found.skip.describe();
    j["skipped_blocks"] = c.found.skip.count();
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace tinfer::cli

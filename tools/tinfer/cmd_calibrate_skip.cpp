// tinfer calibrate-skip: a layer-skip plan chosen by calibration. On a calibration text (default: the slice
// tinfer quantize uses, disjoint from every evaluation slice), the model's own logits are the base. Each layer's
// attention and MLP block is measured twice: how much it changes the hidden state (mean over tokens of
// |block output| / |residual stream entering it|), and the quality with that block alone skipped (mean KLD or
// ΔPPL against the base). Then the blocks are combined greedily (skip_search.h: cheapest quality per saved
// weight byte first, each kept only when the whole plan, measured, stays within the budget), and the plan is
// written (skip_plan_file.h) for --skip-plan. The written plan's measured quality is within the budget.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "calib_text.h"
#include "commands.h"
#include "common.h"
#include "core/error.h"
#include "core/timer.h"
#include "kv_quality_probe.h"
#include "model/model_identity.h"
#include "quality_budget.h"
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
  check(args.has("--model"), "missing -m MODEL\n" + args.help());
  QualityBudget budget = parse_quality_budget(args);
  const std::string blocks = args.str("--blocks");
  check(blocks == "attn,mlp" || blocks == "mlp,attn" || blocks == "mlp" || blocks == "attn",
        "--blocks must be attn,mlp, mlp or attn, got '" + blocks + "'");
  const bool allow_attn = blocks.find("attn") != std::string::npos, allow_mlp = blocks.find("mlp") != std::string::npos;
  const long long calib_tokens = args.integer("--calib-tokens"), max_evals = args.integer("--max-evals");
  check(calib_tokens >= 2, "--calib-tokens must be at least 2");
  check(max_evals >= 0 && max_evals <= 1000000, "--max-evals must be in [0, 1000000]");
  const std::string out_path = args.has("--output") ? args.str("--output") : default_output(args.str("--model"));
  const CalibText text = calib_text_of(args);

  const double t0 = now_s();
  Loaded l = load_model(args);
  Backend* fwd =
      &backend_with(l, {BackendCapability::kLayerSkip, BackendCapability::kActivationObserver}, "calibrate-skip");
  const ModelConfig& mc = l.model->config();
  const int64_t L = mc.n_layers;
  const int64_t ctx = calibration_context(args, *l.model);
  const std::vector<int32_t> calib = calibration_tokens(l.model->tokenizer(), text, calib_tokens);
  // The base and every measurement run the model as it is served (quantized weights, int8 activations), on an
  // f32 KV cache: the budget is against what --skip-plan changes, nothing else.
  KvQualityProbe probe(*fwd, l.pool.get(), calib, ctx);
  budget.resolve(probe.ppl_base());
  const KvPrecision f32 = KvPrecision::uniform(L, KvDtype::f32);
  auto measure = [&](const LayerSkip& s) {
    fwd->set_layer_skip(s);
    const QualitySummary q = probe.measure(f32);
    fwd->set_layer_skip(LayerSkip{});
    return q;
  };
  std::fprintf(stderr, "calibration: %lld tokens of %s, windows of %lld; base PPL %.4f; %.1f s\n",
               (long long)probe.scored_tokens(), text.label.c_str(), (long long)ctx, probe.ppl_base(), now_s() - t0);
  const BlockChange change = measure_block_change(*fwd, calib, ctx);

  // Each block alone.
  const size_t full_bytes = fwd->weight_bytes_read();
  std::vector<SkipCandidate> cands;
  std::vector<QualitySummary> alone_q;
  json sensitivity = json::array();
  const bool progress = isatty(2);
  for (int64_t layer = 0; layer < L; ++layer) {
    json row = {{"layer", layer}, {"attn_change", change.attn[size_t(layer)]}, {"mlp_change", change.mlp[size_t(layer)]}};
    for (bool mlp : {false, true}) {
      if (mlp ? !allow_mlp : !allow_attn) continue;
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
    if (progress) std::fprintf(stderr, "\rsensitivity: layer %lld/%lld, %.0f s", (long long)layer + 1, (long long)L, now_s() - t0);
  }
  if (progress) std::fprintf(stderr, "\n");

  // Greedy combination; every plan measured whole.
  QualitySummary measured{};
  bool measured_any = false;
  const SkipSearchResult found = greedy_skip_search(
      L, cands, budget.value,
      [&](const LayerSkip& s) {
        const QualitySummary q = measure(s);
        if (budget.within(q)) measured = q, measured_any = true;
        if (progress) std::fprintf(stderr, "\rcombining: %s, %.0f s        ", s.describe().c_str(), now_s() - t0);
        return std::max(budget.of(q), 0.0);
      },
      int(max_evals));
  if (progress) std::fprintf(stderr, "\n");
  const LayerSkip& plan = found.skip;
  if (!measured_any) measured = measure(plan);  // the empty plan: the base itself (KLD 0)
  fwd->set_layer_skip(plan);
  const size_t plan_bytes = fwd->weight_bytes_read();
  fwd->set_layer_skip(LayerSkip{});
  const int64_t kv_full = KvPrecision::uniform(L, KvDtype::f16).bytes_per_token(mc.n_kv_heads, mc.head_dim);
  KvPrecision kv_plan = KvPrecision::uniform(L, KvDtype::f16);
  kv_plan.no_kv = plan.attn;
  const int64_t kv_kept = kv_plan.bytes_per_token(mc.n_kv_heads, mc.head_dim);
  const double secs = now_s() - t0;
  const bool within = budget.within(measured);

  // Report.
  std::printf("per block: hidden-state change |delta|/|x| and %s vs the base with only that block skipped\n",
              budget.unit());
  std::printf("| layer | attn change | mlp change | attn %s | mlp %s | plan |\n|---|---|---|---|---|---|\n", budget.unit(),
              budget.unit());
  size_t ci = 0;
  for (int64_t layer = 0; layer < L; ++layer) {
    std::printf("| %lld | %.4f | %.4f |", (long long)layer, change.attn[size_t(layer)], change.mlp[size_t(layer)]);
    for (bool mlp : {false, true}) {
      if (ci < cands.size() && cands[ci].layer == layer && cands[ci].mlp == mlp)
        std::printf(" %.4g |", budget.of(alone_q[ci++]));
      else
        std::printf(" - |");
    }
    std::printf(" %s |\n", skip_layer_name(plan, layer));
  }
  std::printf("plan         %s\n", plan.describe().c_str());
  std::printf("weights      %.2f MiB read per decode step of %.2f MiB (%.1f%% saved)\n", plan_bytes / 1048576.0,
              full_bytes / 1048576.0, 100.0 * (1.0 - double(plan_bytes) / double(full_bytes)));
  std::printf("KV           %lld of %lld bytes/token at f16 (%lld of %lld layers hold KV)\n", (long long)kv_kept,
              (long long)kv_full, (long long)kv_plan.layers_with_kv(), (long long)L);
  std::printf("measured     KLD mean %.4g, ΔPPL %+.5f (%+.3f%%), top-1 %.2f%% on %lld calibration tokens; budget %s %s%s\n",
              measured.kl_mean, measured.dppl, 100 * measured.dppl / probe.ppl_base(), 100 * measured.top1,
              (long long)probe.scored_tokens(), budget.unit(), budget.text.c_str(), within ? "" : " -- NOT MET");
  std::printf("time         %.1f s, %lld evaluations (%d whole plans)\n", secs, (long long)probe.evaluations(),
              found.evaluations);

  SkipPlanFile file{model_identity(*l.model), plan,
                    {{"metric", budget.metric()},
                     {"budget", budget.value},
                     {"budget_arg", budget.text},
                     {"within_budget", within},
                     {"blocks", blocks},
                     {"measured_on", "model as it runs, f32 KV cache"},
                     {"text", text.label},
                     {"tokens", probe.scored_tokens()},
                     {"ctx", ctx},
                     {"ppl_base", probe.ppl_base()},
                     {"measured", quality_json(measured)},
                     {"weight_bytes_read", plan_bytes},
                     {"weight_bytes_full", full_bytes},
                     {"kv_layers", kv_plan.layers_with_kv()},
                     {"sensitivity", sensitivity},
                     {"evaluations", probe.evaluations()},
                     {"seconds", secs}}};
  write_skip_plan(file, out_path);
  std::printf("wrote        %s\n", out_path.c_str());
  if (args.flag("--json")) {
    json j = file.calibration;
    j.erase("sensitivity");
    j.update(quality_json(measured));
    j["plan"] = out_path;
    j["skip"] = plan.describe();
    j["skipped_blocks"] = plan.count();
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace tinfer::cli

// tinfer calibrate-kv: per-layer KV precision chosen by calibration. On a calibration text (default: the slice
// tinfer quantize uses, disjoint from every evaluation slice), the logits with an f32 KV cache are the base. The
// floor is f16 when an all-f16 cache is within the budget, else f32. Then each layer's K and V, separately, is
// lowered alone to each --types type and measured (quality vs the base: mean KLD, or ΔPPL); the cheapest plan
// whose summed costs fit the budget is chosen greedily (kv_plan_search.h), the whole plan is measured, and the
// most costly lowerings are backed off until the measured quality is within budget; a plan within budget is grown
// (the greedy's budget doubled, then bisected, each plan measured) since single-slot costs need not add; a uniform
// type measured within budget and cheaper wins. Prints the table and the bytes per token against f16 and f32,
// and writes the plan (kv_plan_file.h) for --kv-plan. The written plan's measured quality is within the budget.
// With --k-smooth (on by default) every measured cache with a quantized K, and the plan, carry K smoothing
// factors calibrated on the same text.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "calib_text.h"
#include "commands.h"
#include "common.h"
#include "core/error.h"
#include "core/timer.h"
#include "plans/kv_plan_file.h"
#include "plans/kv_plan_search.h"
#include "kv_quality_probe.h"
#include "quality_budget.h"
#include "model/model_identity.h"
#include "ppl_scoring.h"
#include "quantize/calib_stats.h"
#include "quantize/k_smoothing.h"

namespace tinfer::cli {

using nlohmann::json;

namespace {

// "int8,int4" -> the quantized types, most bytes first; Error on anything else.
std::vector<KvDtype> parse_types(const std::string& list) {
  std::vector<KvDtype> types;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    KvDtype t;
    check(parse_kv_dtype(item, &t) && kv_dtype_quantized(t),
          "--types lists quantized KV types (int8, int4), got '" + item +
              "' (f32 or f16 is the floor, chosen by measurement)");
    check(std::find(types.begin(), types.end(), t) == types.end(), "--types names '" + item + "' twice");
    types.push_back(t);
  }
  check(!types.empty(), "--types is empty");
  std::sort(types.begin(), types.end(), [](KvDtype a, KvDtype b) { return kv_dtype_info(a).value_bits > kv_dtype_info(b).value_bits; });
  return types;
}

std::string default_output(const std::string& model_path) {
  return std::filesystem::path(model_path).stem().string() + ".kv-plan.json";
}

}  // namespace

int cmd_calibrate_kv(int argc, char** argv) {
  auto spec = concat(model_options(),
                     {{"--types", "quantized types to try, comma-separated", true, "int8,int4"},
                      {"--measure-on", "float: the model's float image (quality free of int8 activation noise); model: "
                                       "the file as it runs", true, "float"},
                      {"--k-smooth", "K smoothing: per-channel factors on K absorbed by q, alpha in [0, 1] (s = max|k|^a / "
                                     "max|q|^(1-a)), or off", true, "0.5"},
                      {"-o,--output", "plan file to write (default: <model name>.kv-plan.json here)"},
                      {"--json", "print one JSON object on the last line", false}});
  spec = concat(spec, quality_budget_options("the f32 KV cache"));
  spec = concat(spec, calib_text_options("1024"));
  Args args(argc, argv, spec,
            "tinfer calibrate-kv -m MODEL (--budget-kld X | --budget-ppl X[%]) [--calib FILE] [--calib-tokens N] "
            "[--ctx N] [--types int8,int4] [--k-smooth A|off] [-o plan.json] [--json] [-t N]");
  check(args.has("--model"), "missing -m MODEL\n" + args.help());
  QualityBudget budget = parse_quality_budget(args);
  const std::vector<KvDtype> types = parse_types(args.str("--types"));
  const long long calib_tokens = args.integer("--calib-tokens");
  check(calib_tokens >= 2, "--calib-tokens must be at least 2");
  const std::string out_path = args.has("--output") ? args.str("--output") : default_output(args.str("--model"));
  CalibText text = calib_text_of(args);

  const double t0 = now_s();
  Loaded l = load_model(args);
  const ModelConfig& mc = l.model->config();
  const int64_t ctx = calibration_context(args, *l.model);
  const std::vector<int32_t> calib = calibration_tokens(l.model->tokenizer(), text, calib_tokens);
  // Measured on the model's float image by default: with quantized weights the fast path rounds every
  // activation to int8, and any perturbation re-draws all those roundings, so two runs of a quantized model
  // that differ anywhere differ by ~3.5e-3 nats of KL (SmolLM2 Q4_1: f16 vs f32 KV) -- a floor that would
  // hide the KV types' own effect. The float image measures the KV error alone; the plan names -m.
  const std::string measure_on = args.str("--measure-on");
  check(measure_on == "float" || measure_on == "model", "--measure-on must be float or model, got '" + measure_on + "'");
  std::unique_ptr<Model> image = measure_on == "float" ? float_image(*l.model, true) : nullptr;
  std::unique_ptr<Backend> image_backend;
  if (image) image_backend = create_backend("cpu", *image, BackendOptions{.pool = l.pool.get(), .max_positions = ctx});
  const Model& measured_model = image ? *image : *l.model;
  KvQualityProbe probe(image ? *image_backend : *l.backend, l.pool.get(), calib, ctx);
  // K smoothing (quantize/k_smoothing.h), from the same text: every measured cache and the plan carry it.
  std::vector<std::vector<float>> smooth;
  const std::string smooth_arg = args.str("--k-smooth");
  if (smooth_arg != "off") {
    char* end = nullptr;
    const double alpha = std::strtod(smooth_arg.c_str(), &end);
    check(end && *end == '\0' && alpha >= 0 && alpha <= 1, "--k-smooth must be off or an alpha in [0, 1], got '" + smooth_arg + "'");
    KSmoothOptions o;
    o.max_tokens = calib_tokens, o.ctx = ctx, o.alpha = alpha, o.threads = int(l.pool->size());
    smooth = k_smoothing_factors(collect_qk_absmax(measured_model, calib, o), mc.head_dim, alpha, o.floor);
  }
  auto S = [&](KvPrecision p) {  // only where some K is quantized: elsewhere it would change rounding alone
    bool quantized_k = false;
    for (const KvLayerTypes& t : p.layers) quantized_k = quantized_k || kv_dtype_quantized(t.k);
    if (quantized_k) p.k_smooth = smooth;
    return p;
  };
  budget.resolve(probe.ppl_base());
  std::fprintf(stderr, "calibration: %lld tokens of %s, windows of %lld; base (f32 KV) PPL %.4f; %.1f s\n",
               (long long)probe.scored_tokens(), text.label.c_str(), (long long)ctx, probe.ppl_base(), now_s() - t0);

  const int64_t L = mc.n_layers, H = mc.n_kv_heads, D = mc.head_dim;
  auto uniform_bytes = [&](KvDtype t) { return KvPrecision::uniform(L, t).bytes_per_token(H, D); };
  // Uniform caches: the floor (f16 if within budget) and each type, for the report and as a shortcut.
  json uniform = json::object();
  const QualitySummary f16 = probe.measure(S(KvPrecision::uniform(L, KvDtype::f16)));
  uniform["f16"] = quality_json(f16);
  const KvDtype floor = budget.of(f16) <= budget.value ? KvDtype::f16 : KvDtype::f32;
  const double floor_cost = floor == KvDtype::f16 ? std::max(budget.of(f16), 0.0) : 0.0;
  std::vector<QualitySummary> uniform_q;
  for (KvDtype t : types) {
    uniform_q.push_back(probe.measure(S(KvPrecision::uniform(L, t))));
    uniform[kv_dtype_name(t)] = quality_json(uniform_q.back());
  }

  // Slots: 2l = layer l's K, 2l+1 = its V. Sensitivity: only that slot lowered, every other at f32.
  std::vector<KvSlot> slots(size_t(2 * L));
  for (KvSlot& s : slots) s.options.push_back({floor, H * kv_head_bytes(floor, D), 0});
  json sensitivity = json::array();
  const bool cheapest_fits = budget.of(uniform_q.back()) <= budget.value;
  if (!cheapest_fits) {
    const bool progress = isatty(2);
    for (int64_t layer = 0; layer < L; ++layer) {
      json row = {{"layer", layer}, {"k", json::object()}, {"v", json::object()}};
      for (int kv = 0; kv < 2; ++kv)
        for (KvDtype t : types) {
          KvPrecision p = KvPrecision::uniform(L, KvDtype::f32);
          (kv ? p.layers[size_t(layer)].v : p.layers[size_t(layer)].k) = t;
          const QualitySummary q = probe.measure(S(p));
          row[kv ? "v" : "k"][kv_dtype_name(t)] = quality_json(q);
          slots[size_t(2 * layer + kv)].options.push_back({t, H * kv_head_bytes(t, D), std::max(budget.of(q), 0.0)});
        }
      sensitivity.push_back(row);
      if (progress) std::fprintf(stderr, "\rsensitivity: layer %lld/%lld, %.0f s", (long long)layer + 1, (long long)L, now_s() - t0);
    }
    if (progress) std::fprintf(stderr, "\n");
  }

  // The plan: the cheapest uniform type when it fits; else greedy, measured, backed off until within budget.
  auto precision_of = [&](const SlotChoice& c) {
    KvPrecision p = KvPrecision::uniform(L, floor);
    for (int64_t layer = 0; layer < L; ++layer)
      p.layers[size_t(layer)] = {slots[size_t(2 * layer)].options[size_t(c[size_t(2 * layer)])].type,
                                 slots[size_t(2 * layer + 1)].options[size_t(c[size_t(2 * layer + 1)])].type};
    return S(p);
  };
  KvPrecision plan;
  QualitySummary measured;
  int back_offs = 0, growths = 0;
  constexpr int kGrowthProbes = 6;  // measured plans at most while growing
  if (cheapest_fits) {
    plan = S(KvPrecision::uniform(L, types.back()));
    measured = uniform_q.back();
  } else {
    SlotChoice choice = choose_within_budget(slots, budget.value - floor_cost);
    for (;;) {
      plan = precision_of(choice);
      measured = plan == S(KvPrecision::uniform(L, KvDtype::f16)) ? f16 : probe.measure(plan);
      if (budget.of(measured) <= budget.value) break;
      // Over budget: the costs did not add up; aim the prediction down by the measured excess.
      const double predicted = floor_cost + predicted_cost(slots, choice);
      const double target = predicted * budget.value / budget.of(measured) - floor_cost;
      if (!back_off(slots, choice, target)) break;
      ++back_offs;
    }
    // Within budget, the summed single-slot costs may over-predict by far (on a model whose activations are
    // quantized, any perturbation of an early layer costs about as much as lowering every layer). So grow the
    // greedy's budget while the measured plan stays within, doubling, then bisecting at the edge.
    if (budget.of(measured) <= budget.value) {
      double lo = predicted_cost(slots, choice), hi = -1;
      for (int probes = 0; probes < kGrowthProbes && (hi < 0 || hi > 1.05 * lo);) {
        const double g = hi < 0 ? std::max(2 * lo, budget.value) : 0.5 * (lo + hi);
        if (g <= lo) break;  // a zero budget
        const SlotChoice c = choose_within_budget(slots, g);
        if (plan_bytes(slots, c) >= plan.bytes_per_token(H, D)) {  // nothing new to measure at this budget
          if (hi < 0 && predicted_cost(slots, c) < g) break;      // every lowering already taken
          lo = g;
          continue;
        }
        ++probes, ++growths;
        const KvPrecision p = precision_of(c);
        const QualitySummary q = probe.measure(p);
        if (budget.of(q) <= budget.value) plan = p, measured = q, lo = g;
        else hi = g;
      }
    }
  }
  // A uniform cache already measured within budget and cheaper than the plan wins (e.g. uniform int8).
  for (size_t i = 0; i < types.size(); ++i)
    if (budget.of(uniform_q[i]) <= budget.value &&
        uniform_bytes(types[i]) < plan.bytes_per_token(H, D))
      plan = S(KvPrecision::uniform(L, types[i])), measured = uniform_q[i];
  const bool all_floor = plan == S(KvPrecision::uniform(L, floor));
  const double secs = now_s() - t0;

  // Report.
  const char* unit = budget.unit();
  if (!sensitivity.empty()) {
    std::printf("sensitivity: %s vs the f32 cache with only that layer's K or V lowered\n| layer |", unit);
    for (const char* kv : {"K", "V"})
      for (KvDtype t : types) std::printf(" %s %s |", kv, kv_dtype_name(t));
    std::printf(" chosen K | chosen V |\n|---|");
    for (size_t i = 0; i < 2 * types.size() + 2; ++i) std::printf("---|");
    std::printf("\n");
    for (int64_t layer = 0; layer < L; ++layer) {
      std::printf("| %lld |", (long long)layer);
      for (const char* kv : {"k", "v"})
        for (KvDtype t : types) std::printf(" %.3g |", sensitivity[size_t(layer)][kv][kv_dtype_name(t)][budget.metric()].get<double>());
      std::printf(" %s | %s |\n", kv_dtype_name(plan.layers[size_t(layer)].k), kv_dtype_name(plan.layers[size_t(layer)].v));
    }
  } else {
    std::printf("uniform %s is within the budget: no per-layer sweep needed\n", kv_dtype_name(types.back()));
  }
  const int64_t bytes = plan.bytes_per_token(H, D), b16 = uniform_bytes(KvDtype::f16), b32 = uniform_bytes(KvDtype::f32);
  const bool within = budget.of(measured) <= budget.value;
  std::printf("uniform      f16 KLD %.3g ΔPPL %+.4f", f16.kl_mean, f16.dppl);
  for (size_t i = 0; i < types.size(); ++i)
    std::printf(" | %s KLD %.3g ΔPPL %+.4f (%lld bytes/token)", kv_dtype_name(types[i]), uniform_q[i].kl_mean,
                uniform_q[i].dppl, (long long)uniform_bytes(types[i]));
  std::printf("\nplan         %s; floor %s%s\n", plan.describe().c_str(), kv_dtype_name(floor),
              all_floor ? " (no lowering fits the budget: the plan is the floor)" : "");
  std::printf("bytes/token  %lld = %.3f of f16 (%lld), %.3f of f32 (%lld)\n", (long long)bytes, double(bytes) / double(b16),
              (long long)b16, double(bytes) / double(b32), (long long)b32);
  std::printf("measured     KLD mean %.4g, ΔPPL %+.5f (%+.3f%%), top-1 %.2f%% on %lld calibration tokens; budget %s %s%s\n",
              measured.kl_mean, measured.dppl, 100 * measured.dppl / probe.ppl_base(), 100 * measured.top1,
              (long long)probe.scored_tokens(), unit, budget.text.c_str(), within ? "" : " -- NOT MET");
  std::printf("time         %.1f s, %lld evaluations (%d back-off rounds, %d growth probes)\n", secs,
              (long long)probe.evaluations(), back_offs, growths);

  KvPlanFile file{model_identity(*l.model), plan,
                  {{"metric", budget.metric()},
                   {"budget", budget.value},
                   {"budget_arg", budget.text},
                   {"within_budget", within},
                   {"floor", kv_dtype_name(floor)},
                   {"k_smooth_alpha", smooth_arg},
                   {"measured_on", image ? "float image" : "model as it runs"},
                   {"types", [&] { json a = json::array(); for (KvDtype t : types) a.push_back(kv_dtype_name(t)); return a; }()},
                   {"text", text.label},
                   {"tokens", probe.scored_tokens()},
                   {"ctx", ctx},
                   {"ppl_base", probe.ppl_base()},
                   {"measured", quality_json(measured)},
                   {"bytes_per_token", bytes},
                   {"bytes_per_token_f16", b16},
                   {"bytes_per_token_f32", b32},
                   {"uniform", uniform},
                   {"sensitivity", sensitivity},
                   {"evaluations", probe.evaluations()},
                   {"seconds", secs}}};
  write_kv_plan(file, out_path);
  std::printf("wrote        %s\n", out_path.c_str());
  if (args.flag("--json")) {
    json j = file.calibration;
    j.erase("sensitivity");
    j.update(quality_json(measured));  // the plan's measured quality, at the top
    j["plan"] = out_path;
    j["kv_types"] = plan.describe();
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace tinfer::cli

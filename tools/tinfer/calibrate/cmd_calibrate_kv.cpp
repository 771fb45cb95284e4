// tinfer calibrate-kv: per-layer KV precision chosen by calibration. On a calibration text (default: the slice
// tinfer quantize uses, disjoint from every evaluation slice), the logits with an f32 KV cache are the base. The
// floor is f16 when an all-f16 cache is within the budget, else f32. Then each layer's K and V, separately, is
// lowered alone to each --types type and measured (quality vs the base: mean KLD, or ΔPPL); the cheapest plan
// whose summed costs fit the budget is chosen greedily (plans/kv_plan_search.h), the whole plan is measured, and the
// most costly lowerings are backed off until the measured quality is within budget; a plan within budget is grown
// (the greedy's budget doubled, then bisected, each plan measured) since single-slot costs need not add; a uniform
// type measured within budget and cheaper wins. Prints the table and the bytes per token against f16 and f32,
// and writes the plan (plans/kv_plan_file.h) for --kv-plan. The written plan's measured quality is within the budget.
// With --k-smooth (on by default) every measured cache with a quantized K, and the plan, carry K smoothing
// factors calibrated on the same text.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "cli/calib_text.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "core/timer.h"
#include "plans/kv_plan_file.h"
#include "plans/kv_plan_search.h"
#include "quality/kv_quality_probe.h"
#include "quality/quality_budget.h"
#include "model/model_identity.h"
#include "quality/ppl_scoring.h"
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

struct KvCalibOptions {
  QualityBudget budget;
  std::vector<KvDtype> types;  // quantized, most bytes first
  long long calib_tokens = 0;
  std::string out_path, smooth_arg, measure_on;
  CalibText text;
  bool json = false;
};

KvCalibOptions parse_calibrate_kv(const Args& args) {
  check(args.has("--model"), "missing -m MODEL\n" + args.help());
  KvCalibOptions o;
  o.budget = parse_quality_budget(args);
  o.types = parse_types(args.str("--types"));
  o.calib_tokens = args.integer("--calib-tokens");
  check(o.calib_tokens >= 2, "--calib-tokens must be at least 2");
  o.out_path = args.has("--output") ? args.str("--output") : default_output(args.str("--model"));
  o.text = calib_text_of(args);
  o.smooth_arg = args.str("--k-smooth");
  o.measure_on = args.str("--measure-on");
  o.json = args.flag("--json");
  return o;
}

// One calibration run: the model, the probe on the calibration windows, and what has been measured so far.
struct KvCalibration {
  const KvCalibOptions& o;
  QualityBudget budget;
  double t0 = now_s();
  Loaded l;
  int64_t ctx = 0, L = 0, H = 0, D = 0;
  std::vector<int32_t> calib;
  std::unique_ptr<Model> image;  // the float image measured on (--measure-on float), else null
  std::unique_ptr<Backend> image_backend;
  std::unique_ptr<KvQualityProbe> probe;
  std::vector<std::vector<float>> smooth;  // K smoothing factors, or empty (--k-smooth off)
  // Uniform caches: f16, then each of o.types; the floor (f16 if within budget, else f32) and its cost.
  json uniform = json::object();
  QualitySummary f16;
  std::vector<QualitySummary> uniform_q;
  KvDtype floor = KvDtype::f32;
  double floor_cost = 0;
  // Slots: 2l = layer l's K, 2l+1 = its V; their options and measured costs; the sweep's table for the report.
  std::vector<KvSlot> slots;
  json sensitivity = json::array();
  KvPrecision plan;
  QualitySummary measured;
  int back_offs = 0, growths = 0;

  KvCalibration(const Args& args, const KvCalibOptions& opts) : o(opts), budget(opts.budget), l(load_model(args)) {
    const ModelConfig& mc = l.model->config();
    L = mc.n_layers, H = mc.n_kv_heads, D = mc.head_dim;
    ctx = calibration_context(args, *l.model);
    calib = calibration_tokens(l.model->tokenizer(), o.text, o.calib_tokens);
    // Measured on the model's float image by default: with quantized weights the fast path rounds every
    // activation to int8, and any perturbation re-draws all those roundings, so two runs of a quantized model
    // that differ anywhere differ by ~3.5e-3 nats of KL (SmolLM2 Q4_1: f16 vs f32 KV) -- a floor that would
    // hide the KV types' own effect. The float image measures the KV error alone; the plan names -m.
    check(o.measure_on == "float" || o.measure_on == "model",
          "--measure-on must be float or model, got '" + o.measure_on + "'");
    if (o.measure_on == "float") image = float_image(*l.model, true);
    if (image) image_backend = create_backend("cpu", *image, BackendOptions{.pool = l.pool.get(), .max_positions = ctx});
    probe = std::make_unique<KvQualityProbe>(image ? *image_backend : *l.backend, l.pool.get(), calib, ctx);
    smooth = smoothing_factors(image ? *image : *l.model);
    budget.resolve(probe->ppl_base());
    std::fprintf(stderr, "calibration: %lld tokens of %s, windows of %lld; base (f32 KV) PPL %.4f; %.1f s\n",
                 (long long)probe->scored_tokens(), o.text.label.c_str(), (long long)ctx, probe->ppl_base(),
                 now_s() - t0);
  }

  // K smoothing (quantize/k_smoothing.h), from the same text: every measured cache and the plan carry it.
  std::vector<std::vector<float>> smoothing_factors(const Model& measured_model) const {
    if (o.smooth_arg == "off") return {};
    char* end = nullptr;
    const double alpha = std::strtod(o.smooth_arg.c_str(), &end);
    check(end && *end == '\0' && alpha >= 0 && alpha <= 1,
          "--k-smooth must be off or an alpha in [0, 1], got '" + o.smooth_arg + "'");
    KSmoothOptions so;
    so.max_tokens = o.calib_tokens, so.ctx = ctx, so.alpha = alpha, so.threads = int(l.pool->size());
    return k_smoothing_factors(collect_qk_absmax(measured_model, calib, so), l.model->config().head_dim, alpha,
                               so.floor);
  }

  KvPrecision S(KvPrecision p) const {  // only where some K is quantized: elsewhere it would change rounding alone
    bool quantized_k = false;
    for (const KvLayerTypes& t : p.layers) quantized_k = quantized_k || kv_dtype_quantized(t.k);
    if (quantized_k) p.k_smooth = smooth;
    return p;
  }
  int64_t uniform_bytes(KvDtype t) const { return KvPrecision::uniform(L, t).bytes_per_token(H, D); }
  bool within(const QualitySummary& q) const { return budget.of(q) <= budget.value; }
  bool cheapest_fits() const { return within(uniform_q.back()); }

  // Uniform caches: the floor (f16 if within budget) and each type, for the report and as a shortcut.
  void measure_uniform() {
    f16 = probe->measure(S(KvPrecision::uniform(L, KvDtype::f16)));
    uniform["f16"] = quality_json(f16);
    floor = within(f16) ? KvDtype::f16 : KvDtype::f32;
    floor_cost = floor == KvDtype::f16 ? std::max(budget.of(f16), 0.0) : 0.0;
    for (KvDtype t : o.types) {
      uniform_q.push_back(probe->measure(S(KvPrecision::uniform(L, t))));
      uniform[kv_dtype_name(t)] = quality_json(uniform_q.back());
    }
  }

  // Sensitivity: only that slot lowered, every other at f32.
  void sweep_sensitivity() {
    slots.assign(size_t(2 * L), {});
    for (KvSlot& s : slots) s.options.push_back({floor, H * kv_head_bytes(floor, D), 0});
    if (cheapest_fits()) return;
    const bool progress = isatty(2);
    for (int64_t layer = 0; layer < L; ++layer) {
      json row = {{"layer", layer}, {"k", json::object()}, {"v", json::object()}};
      for (int kv = 0; kv < 2; ++kv)
        for (KvDtype t : o.types) {
          KvPrecision p = KvPrecision::uniform(L, KvDtype::f32);
          (kv ? p.layers[size_t(layer)].v : p.layers[size_t(layer)].k) = t;
          const QualitySummary q = probe->measure(S(p));
          row[kv ? "v" : "k"][kv_dtype_name(t)] = quality_json(q);
          slots[size_t(2 * layer + kv)].options.push_back({t, H * kv_head_bytes(t, D), std::max(budget.of(q), 0.0)});
        }
      sensitivity.push_back(row);
      if (progress)
        std::fprintf(stderr, "\rsensitivity: layer %lld/%lld, %.0f s", (long long)layer + 1, (long long)L, now_s() - t0);
    }
    if (progress) std::fprintf(stderr, "\n");
  }

  KvPrecision precision_of(const SlotChoice& c) const {
    KvPrecision p = KvPrecision::uniform(L, floor);
    for (int64_t layer = 0; layer < L; ++layer)
      p.layers[size_t(layer)] = {slots[size_t(2 * layer)].options[size_t(c[size_t(2 * layer)])].type,
                                 slots[size_t(2 * layer + 1)].options[size_t(c[size_t(2 * layer + 1)])].type};
    return S(p);
  }

  // Greedy, measured, backed off until within budget; returns the last choice.
  SlotChoice greedy_backed_off() {
    SlotChoice choice = choose_within_budget(slots, budget.value - floor_cost);
    for (;;) {
      plan = precision_of(choice);
      measured = plan == S(KvPrecision::uniform(L, KvDtype::f16)) ? f16 : probe->measure(plan);
      if (within(measured)) break;
      // Over budget: the costs did not add up; aim the prediction down by the measured excess.
      const double predicted = floor_cost + predicted_cost(slots, choice);
      const double target = predicted * budget.value / budget.of(measured) - floor_cost;
      if (!back_off(slots, choice, target)) break;
      ++back_offs;
    }
    return choice;
  }

  // Within budget, the summed single-slot costs may over-predict by far (on a model whose activations are
  // quantized, any perturbation of an early layer costs about as much as lowering every layer). So grow the
  // greedy's budget while the measured plan stays within, doubling, then bisecting at the edge.
  void grow(const SlotChoice& choice) {
    constexpr int kGrowthProbes = 6;  // measured plans at most while growing
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
      const QualitySummary q = probe->measure(p);
      if (within(q)) plan = p, measured = q, lo = g;
      else hi = g;
    }
  }

  // The plan: the cheapest uniform type when it fits; else greedy, measured, backed off, grown. A uniform cache
  // already measured within budget and cheaper than the plan wins (e.g. uniform int8).
  void choose_plan() {
    if (cheapest_fits()) {
      plan = S(KvPrecision::uniform(L, o.types.back()));
      measured = uniform_q.back();
    } else {
      const SlotChoice choice = greedy_backed_off();
      if (within(measured)) grow(choice);
    }
    for (size_t i = 0; i < o.types.size(); ++i)
      if (within(uniform_q[i]) && uniform_bytes(o.types[i]) < plan.bytes_per_token(H, D))
        plan = S(KvPrecision::uniform(L, o.types[i])), measured = uniform_q[i];
  }
};

void print_sensitivity(const KvCalibration& c) {
  const auto& types = c.o.types;
  if (c.sensitivity.empty()) {
    std::printf("uniform %s is within the budget: no per-layer sweep needed\n", kv_dtype_name(types.back()));
    return;
  }
  std::printf("sensitivity: %s vs the f32 cache with only that layer's K or V lowered\n| layer |", c.budget.unit());
  for (const char* kv : {"K", "V"})
    for (KvDtype t : types) std::printf(" %s %s |", kv, kv_dtype_name(t));
  std::printf(" chosen K | chosen V |\n|---|");
  for (size_t i = 0; i < 2 * types.size() + 2; ++i) std::printf("---|");
  std::printf("\n");
  for (int64_t layer = 0; layer < c.L; ++layer) {
    std::printf("| %lld |", (long long)layer);
    for (const char* kv : {"k", "v"})
      for (KvDtype t : types)
        std::printf(" %.3g |", c.sensitivity[size_t(layer)][kv][kv_dtype_name(t)][c.budget.metric()].get<double>());
    std::printf(" %s | %s |\n", kv_dtype_name(c.plan.layers[size_t(layer)].k),
                kv_dtype_name(c.plan.layers[size_t(layer)].v));
  }
}

void print_summary(const KvCalibration& c, double secs) {
  const auto& types = c.o.types;
  const bool all_floor = c.plan == c.S(KvPrecision::uniform(c.L, c.floor));
  const int64_t bytes = c.plan.bytes_per_token(c.H, c.D), b16 = c.uniform_bytes(KvDtype::f16),
                b32 = c.uniform_bytes(KvDtype::f32);
  const QualitySummary& m = c.measured;
  std::printf("uniform      f16 KLD %.3g ΔPPL %+.4f", c.f16.kl_mean, c.f16.dppl);
  for (size_t i = 0; i < types.size(); ++i)
    std::printf(" | %s KLD %.3g ΔPPL %+.4f (%lld bytes/token)", kv_dtype_name(types[i]), c.uniform_q[i].kl_mean,
                c.uniform_q[i].dppl, (long long)c.uniform_bytes(types[i]));
  std::printf("\nplan         %s; floor %s%s\n", c.plan.describe().c_str(), kv_dtype_name(c.floor),
              all_floor ? " (no lowering fits the budget: the plan is the floor)" : "");
  std::printf("bytes/token  %lld = %.3f of f16 (%lld), %.3f of f32 (%lld)\n", (long long)bytes,
              double(bytes) / double(b16), (long long)b16, double(bytes) / double(b32), (long long)b32);
  std::printf("measured     KLD mean %.4g, ΔPPL %+.5f (%+.3f%%), top-1 %.2f%% on %lld calibration tokens; budget %s %s%s\n",
              m.kl_mean, m.dppl, 100 * m.dppl / c.probe->ppl_base(), 100 * m.top1,
              (long long)c.probe->scored_tokens(), c.budget.unit(), c.budget.text.c_str(),
              c.within(m) ? "" : " -- NOT MET");
  std::printf("time         %.1f s, %lld evaluations (%d back-off rounds, %d growth probes)\n", secs,
              (long long)c.probe->evaluations(), c.back_offs, c.growths);
}

KvPlanFile plan_file(const KvCalibration& c, double secs) {
  json types = json::array();
  for (KvDtype t : c.o.types) types.push_back(kv_dtype_name(t));
  return KvPlanFile{model_identity(*c.l.model), c.plan,
                    {{"metric", c.budget.metric()},
                     {"budget", c.budget.value},
                     {"budget_arg", c.budget.text},
                     {"within_budget", c.within(c.measured)},
                     {"floor", kv_dtype_name(c.floor)},
                     {"k_smooth_alpha", c.o.smooth_arg},
                     {"measured_on", c.image ? "float image" : "model as it runs"},
                     {"types", types},
                     {"text", c.o.text.label},
                     {"tokens", c.probe->scored_tokens()},
                     {"ctx", c.ctx},
                     {"ppl_base", c.probe->ppl_base()},
                     {"measured", quality_json(c.measured)},
                     {"bytes_per_token", c.plan.bytes_per_token(c.H, c.D)},
                     {"bytes_per_token_f16", c.uniform_bytes(KvDtype::f16)},
                     {"bytes_per_token_f32", c.uniform_bytes(KvDtype::f32)},
                     {"uniform", c.uniform},
                     {"sensitivity", c.sensitivity},
                     {"evaluations", c.probe->evaluations()},
                     {"seconds", secs}}};
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
  const KvCalibOptions o = parse_calibrate_kv(args);
  KvCalibration c(args, o);
  c.measure_uniform();
  c.sweep_sensitivity();
  c.choose_plan();
  const double secs = now_s() - c.t0;
  print_sensitivity(c);
  print_summary(c, secs);
  const KvPlanFile file = plan_file(c, secs);
  write_kv_plan(file, o.out_path);
  std::printf("wrote        %s\n", o.out_path.c_str());
  if (o.json) {
    json j = file.calibration;
    j.erase("sensitivity");
    j.update(quality_json(c.measured));  // the plan's measured quality, at the top
    j["plan"] = o.out_path;
    j["kv_types"] = c.plan.describe();
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace tinfer::cli

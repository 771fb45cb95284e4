// KV element-type options onto EngineConfig / KvPrecision.
#include "cli/kv_flags.h"

#include <cstdio>

#include "tinfer/error.h"
#include "backend/backend.h"
#include "backend/k_smoothing_at_load.h"
#include "plans/kv_plan_file.h"
#include "plans/skip_plan_file.h"
#include "model/model_identity.h"
#include "cli/quantize_flags.h"

namespace tinfer::cli {

std::vector<OptionSpec> kv_type_options() {
  const std::string types = kKvDtypeNames;
  return {
      // No default value, so that an explicit --kv-dtype can be refused beside --kv-plan (EngineConfig's is f16).
      {"--kv-dtype", types + " (KV cache element type of K and V; default f16)"},
      {"--kv-dtype-k", types + " (K only; default: --kv-dtype)"},
      {"--kv-dtype-v", types + " (V only; default: --kv-dtype)"},
      {"--kv-k-smooth", "auto|off (K smoothing for a quantized K: auto calibrates per-channel factors at load with one "
                        "forward over a built-in text unless a --kv-plan gives them; off: per-token scales alone; "
                        "default auto)"},
      {"--kv-plan", "per-layer K/V types from `tinfer calibrate-kv` (a JSON plan made for the -m model)"},
      {"--skip-plan", "layer sub-blocks to skip from `tinfer calibrate-skip` (a JSON plan made for the -m model; "
                      "layers whose attention is skipped hold no KV)"},
  };
}

LayerSkip skip_plan(const Args& args, const ModelIdentity& model) {
  if (!args.has("--skip-plan")) return {};
  return load_skip_plan(args.str("--skip-plan"), model);
}

namespace {
// With --quantize-on-load the plan must be the quantized model's: its identity is that of the model quantized
// here (an extra quantization at start; the identity hashes the quantized bytes).
ModelIdentity identity_of_model_arg(const Args& args) {
  if (args.has("--quantize-on-load")) return model_identity(*load_model_file(args));
  ModelLoadOptions opts;
  opts.tokenizer_path = args.has("--tokenizer") ? args.str("--tokenizer") : "";
  return read_model_identity(args.str("--model"), opts);
}
}  // namespace

void parse_kv_types(const Args& args, EngineConfig& c, std::vector<std::string>& errs) {
  if (args.has("--skip-plan")) {
    if (!args.has("--model")) errs.push_back("--skip-plan needs -m MODEL (the plan is checked against the model it was made for)");
    else try {
        c.plans.skip = skip_plan(args, identity_of_model_arg(args));
      } catch (const Error& e) {
        errs.push_back(e.what());
      }
  }
  auto one = [&](const char* name, KvDtype* out) {
    const std::string v = args.str(name);
    if (!parse_kv_dtype(v, out)) errs.push_back(std::string(name) + " must be " + kKvDtypeNames + ", got '" + v + "'");
  };
  if (args.has("--kv-dtype")) one("--kv-dtype", &c.kv.dtype);
  if (args.has("--kv-dtype-k")) one("--kv-dtype-k", &c.kv.dtype_k.emplace());
  if (args.has("--kv-dtype-v")) one("--kv-dtype-v", &c.kv.dtype_v.emplace());
  if (args.has("--kv-k-smooth")) {
    const std::string v = args.str("--kv-k-smooth");
    if (v == "auto" || v == "off") c.kv.k_smooth_at_load = v == "auto";
    else errs.push_back("--kv-k-smooth must be auto or off, got '" + v + "'");
  }
  if (!args.has("--kv-plan")) return;
  if (args.has("--kv-dtype") || args.has("--kv-dtype-k") || args.has("--kv-dtype-v")) {
    errs.push_back("--kv-plan gives every layer's K and V types; it cannot be combined with --kv-dtype, --kv-dtype-k "
                   "or --kv-dtype-v");
    return;
  }
  if (!args.has("--model")) {
    errs.push_back("--kv-plan needs -m MODEL (the plan is checked against the model it was made for)");
    return;
  }
  try {
    const std::string path = args.str("--kv-plan");
    const KvPlanFile plan = read_kv_plan(path);
    check_kv_plan_model(plan, identity_of_model_arg(args), "KV plan '" + path + "'");
    c.plans.kv_layers = plan.precision.layers;
    c.plans.kv_k_smooth = plan.precision.k_smooth;
  } catch (const Error& e) {
    errs.push_back(e.what());
  }
}

namespace {
EngineConfig parsed_kv_config(const Args& args) {
  EngineConfig c;
  std::vector<std::string> errs;
  parse_kv_types(args, c, errs);
  if (!errs.empty()) {
    std::string msg;
    for (const std::string& e : errs) msg += (msg.empty() ? "" : "; ") + e;
    fail(msg);
  }
  return c;
}
}  // namespace

KvPrecision kv_precision(const Args& args, int64_t n_layers) { return parsed_kv_config(args).kv_precision(n_layers); }

KvPrecision kv_precision(const Args& args, Backend& backend, const Tokenizer& tok) {
  const EngineConfig c = parsed_kv_config(args);
  KvPrecision p = c.kv_precision(backend.config().n_layers);
  if (!c.kv.k_smooth_at_load || !c.plans.kv_layers.empty()) return p;  // a plan says whether K is smoothed
  const KSmoothingAtLoad ks = apply_k_smoothing_at_load(p, backend, tok);
  if (ks.tokens > 0)
    std::fprintf(stderr, "K smoothing: calibrated at load on %lld built-in tokens in %.2f s\n", (long long)ks.tokens,
                 ks.seconds);
  return p;
}

}  // namespace tinfer::cli

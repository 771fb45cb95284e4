// KV element-type options onto EngineConfig / KvPrecision.
#include "kv_flags.h"

#include "core/error.h"

namespace tinfer::cli {

std::vector<OptionSpec> kv_type_options() {
  const std::string types = kKvDtypeNames;
  return {
      {"--kv-dtype", types + " (KV cache element type of K and V)", true, "f32"},
      {"--kv-dtype-k", types + " (K only; default: --kv-dtype)"},
      {"--kv-dtype-v", types + " (V only; default: --kv-dtype)"},
  };
}

void parse_kv_types(const Args& args, EngineConfig& c, std::vector<std::string>& errs) {
  auto one = [&](const char* name, KvDtype* out) {
    const std::string v = args.str(name);
    if (!parse_kv_dtype(v, out)) errs.push_back(std::string(name) + " must be " + kKvDtypeNames + ", got '" + v + "'");
  };
  one("--kv-dtype", &c.kv_dtype);
  if (args.has("--kv-dtype-k")) one("--kv-dtype-k", &c.kv_dtype_k.emplace());
  if (args.has("--kv-dtype-v")) one("--kv-dtype-v", &c.kv_dtype_v.emplace());
}

KvPrecision kv_precision(const Args& args, int64_t n_layers) {
  EngineConfig c;
  std::vector<std::string> errs;
  parse_kv_types(args, c, errs);
  if (!errs.empty()) {
    std::string msg;
    for (const std::string& e : errs) msg += (msg.empty() ? "" : "; ") + e;
    fail(msg);
  }
  return c.kv_precision(n_layers);
}

}  // namespace tinfer::cli

// tinfer kv-plan: the KV cache accounting of a model without loading its weights — bytes per token per layer,
// blocks, tokens and concurrent sequences that fit a memory budget, the weights' size, and every KV type side
// by side — from a GGUF header, a built-in shape (--like) or a Hugging Face config.json. The figures come from
// the engine's own planner (engine/kv_capacity.h), so they equal what `serve` / `bench throughput` allocate.
#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "cli/engine_flags.h"
#include "cli/kv_flags.h"
#include "modelfile/kv_plan_report.h"
#include "backend/k_smoothing_at_load.h"

namespace tinfer::cli {

namespace {

ModelShape model_shape(const Args& args) {
  const int sources = int(args.has("--model")) + int(args.has("--like")) + int(args.has("--config"));
  check(sources == 1, "give exactly one of -m MODEL.gguf, --like NAME, --config config.json\n" + args.help());
  const std::string wtype = args.has("--weight-type") ? args.str("--weight-type") : "";
  if (args.has("--model")) {
    check(wtype.empty(), "--weight-type applies to --like and --config; a GGUF file's weights are its tensors");
    return model_shape_from_gguf(args.str("--model"));
  }
  if (args.has("--like")) return model_shape_like(args.str("--like"), wtype);
  return model_shape_from_hf_config(args.str("--config"), wtype);
}

}  // namespace

int cmd_kv_plan(int argc, char** argv) {
  Args args(
      argc, argv,
      concat(kv_type_options(),
             {
                 {"-m,--model", "GGUF model or a known name (only its header is read)", true, "", false, true},
                 {"--like", "a built-in shape: " + known_model_names()},
                 {"--config", "a Hugging Face config.json"},
                 {"--weight-type",
                  "--like/--config weights as f32|f16|bf16|q8_0|q4_k|... (default: torch_dtype, else f16)"},
                 {"--memory", "KV budget in bytes (K/M/G suffixes), as the engine's --kv-memory"},
                 {"--kv-fraction", "else this fraction of MemAvailable less the weights, as the engine", true, "0.5"},
                 {"--max-seqs", "with --kv-fraction: the engine's cap (max_seqs x context)", true, "64"},
                 {"-c,--ctx", "context length per sequence (default: the model's)"},
                 {"--block-size", "KV block size in tokens", true, "16"},
                 {"--kv-window", "on|off: sliding-window layers keep only their window (as the engine)", true, "on"},
                 {"--max-batched-tokens", "the engine's step budget (the window pool holds one step)", true, "512"},
                 {"--json", "one JSON object instead of the table", false},
             }),
      "tinfer kv-plan (-m MODEL.gguf | --like NAME | --config config.json) [--memory BYTES | --kv-fraction F] "
      "[--ctx N] [--kv-dtype T] [--json]");
  const ModelShape shape = model_shape(args);
  EngineConfig ec;  // the KV types exactly as every engine tool parses them (so --kv-plan plugs in here too)
  std::vector<std::string> errs;
  parse_kv_types(args, ec, errs);
  if (!errs.empty()) {
    std::string msg;
    for (const std::string& e : errs) msg += (msg.empty() ? "" : "; ") + e;
    fail(msg);
  }
  KvPrecision precision = ec.kv_precision(shape.config.n_layers);
  // Where the engine would calibrate K smoothing at load (a quantized K, no plan), the report names it as the
  // engine's start-up line does; the factors need the weights, so these are placeholders (ones): they change no
  // byte of the accounting.
  if (ec.kv.k_smooth_at_load && ec.plans.kv_layers.empty() && wants_k_smoothing(precision))
    for (int64_t l = 0; l < precision.n_layers(); ++l)
      precision.k_smooth.emplace_back(
          kv_dtype_quantized(precision.layers[size_t(l)].k) ? size_t(shape.config.kv_dim()) : 0, 1.f);
  KvCapacityQuery q;
  if (args.has("--memory")) q.kv_memory_bytes = parse_bytes(args.str("--memory"), "--memory");
  q.kv_fraction = args.number("--kv-fraction");
  check(q.kv_fraction > 0 && q.kv_fraction <= 1, "--kv-fraction must be in (0, 1], got " + args.str("--kv-fraction"));
  q.weight_bytes = shape.weight_bytes;
  // Ranges checked before narrowing to int (a huge value must not wrap into a valid one).
  auto in_range = [&](const char* name, long long lo, long long hi) {
    const long long v = args.integer(name);
    check(v >= lo && v <= hi, std::string(name) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                  "], got " + args.str(name));
    return int(v);
  };
  q.max_seqs = in_range("--max-seqs", 1, 1 << 20);
  q.block_size = in_range("--block-size", 1, 256);
  if (args.has("--ctx")) q.context_len = in_range("--ctx", 1, 1 << 24);
  q.max_step_tokens = in_range("--max-batched-tokens", 1, 1 << 20);
  check(args.str("--kv-window") == "on" || args.str("--kv-window") == "off", "--kv-window must be on or off");
  q.window_kv = args.str("--kv-window") == "on";
  const KvCapacityReport report = kv_capacity(shape.config, precision, q);
  if (args.flag("--json"))
    std::printf("%s\n", kv_plan_json(shape, report).dump(2).c_str());
  else
    std::fputs(kv_plan_table(shape, report).c_str(), stdout);
  return 0;
}

}  // namespace tinfer::cli

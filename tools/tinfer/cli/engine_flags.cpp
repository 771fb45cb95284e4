// Engine option table and its mapping onto EngineConfig (validated once, here at the edge).
#include "cli/engine_flags.h"

#include <cmath>
#include <cstdlib>

#include "cli/common.h"
#include "tinfer/error.h"
#include "cli/exit_flags.h"
#include "cli/kv_flags.h"
#include "cli/quantize_flags.h"
#include "cli/spec_flags.h"

namespace tinfer::cli {

std::vector<OptionSpec> engine_options() {
  return concat(concat(concat(kv_type_options(), early_exit_options()), {
      {"--kv-memory", "KV cache budget in bytes (K/M/G suffixes); overrides --kv-fraction"},
      {"--kv-fraction", "KV budget as a fraction of MemAvailable after loading", true, "0.5"},
      {"--block-size", "KV block size in tokens", true, "16"},
      {"--prefix-caching", "on|off", true, "on"},
      {"--kv-window", "on|off: sliding-window layers keep only their window's KV (off: the whole context)", true, "on"},
      {"--chunked-prefill", "on|off", true, "on"},
      {"--batching", "continuous|static|static-padded", true, "continuous"},
      {"--kv-layout", "paged|reserved", true, "paged"},
      {"--kv-reuse", "resident|fresh: freed KV blocks before never-used ones (resident memory grows to the running peak), or never-used first as vLLM (grows to the whole arena)",
       true, "resident"},
      act_quant_option(),
      {"--max-batched-tokens", "token budget of one step", true, "512"},
      {"--max-seqs", "requests running at once", true, "64"},
      {"--max-tokens-cap", "hard cap on max_tokens (larger asks are clamped)", true, "4096"},
      {"--default-max-tokens", "max_tokens when a request gives none", true, "256"},
      {"--jump-forward", "on|off: structured output commits a grammar's forced tokens without a forward each (their tokenization may differ)",
       true, "off"},
  }), spec_options());
}

int64_t parse_bytes(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  double mult = 1;
  const std::string suffix = end ? std::string(end) : "";
  if (suffix == "K" || suffix == "k") mult = 1024.0;
  else if (suffix == "M" || suffix == "m") mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g") mult = 1024.0 * 1024 * 1024;
  else check(suffix.empty(), option + ": '" + text + "' is not a byte count (e.g. 512M, 2G)");
  check(end != text.c_str() && std::isfinite(v) && v > 0, option + ": '" + text + "' is not a positive byte count");
  return static_cast<int64_t>(v * mult);
}

namespace {

bool on_off(const Args& args, const std::string& name, std::vector<std::string>& errs) {
  const std::string v = args.str(name);
  if (v != "on" && v != "off") errs.push_back(name + " must be on or off, got '" + v + "'");
  return v == "on";
}

}  // namespace

EngineConfig engine_config(const Args& args) {
  check(args.has("--model"), "missing -m MODEL\n" + args.help());
  std::vector<std::string> errs;
  EngineConfig c;
  c.model_path = args.str("--model");
  c.tokenizer_path = args.str("--tokenizer");
  c.packed_cache_dir = args.str("--packed-cache");
  c.packed_cache_copy = packed_cache_copy(args);
  c.threads = static_cast<int>(args.integer("--threads"));
  if (args.has("--kv-memory")) c.kv.memory_bytes = parse_bytes(args.str("--kv-memory"), "--kv-memory");
  c.kv.fraction = args.number("--kv-fraction");
  c.kv.block_size = static_cast<int>(args.integer("--block-size"));
  c.kv.prefix_caching = on_off(args, "--prefix-caching", errs);
  c.kv.window = on_off(args, "--kv-window", errs);
  c.scheduler.chunked_prefill = on_off(args, "--chunked-prefill", errs);
  c.grammar_jump_forward = on_off(args, "--jump-forward", errs);
  if (!parse_batching_mode(args.str("--batching"), &c.batching))
    errs.push_back("--batching must be continuous, static or static-padded, got '" + args.str("--batching") + "'");
  if (!kv::parse_kv_layout(args.str("--kv-layout"), &c.kv.layout))
    errs.push_back("--kv-layout must be paged or reserved, got '" + args.str("--kv-layout") + "'");
  if (!kv::parse_reuse_order(args.str("--kv-reuse"), &c.kv.reuse))
    errs.push_back("--kv-reuse must be resident or fresh, got '" + args.str("--kv-reuse") + "'");
  parse_kv_types(args, c, errs);
  try {
    c.plans.early_exit = early_exit(args);
  } catch (const Error& e) {
    errs.push_back(e.what());
  }
  if (!parse_act_quant(args.str("--act-quant"), &c.act_quant))
    errs.push_back("--act-quant must be block32 or token, got '" + args.str("--act-quant") + "'");
  c.scheduler.max_batched_tokens = static_cast<int>(args.integer("--max-batched-tokens"));
  c.scheduler.max_seqs = static_cast<int>(args.integer("--max-seqs"));
  c.requests.max_tokens_cap = static_cast<int>(args.integer("--max-tokens-cap"));
  c.requests.default_max_tokens = static_cast<int>(args.integer("--default-max-tokens"));
  if (args.has("--ctx")) c.scheduler.max_model_len = static_cast<int>(args.integer("--ctx"));
  parse_spec(args, c.spec, errs);
  check_quantize_on_load(args, errs);
  for (auto& e : c.validate()) errs.push_back(std::move(e));
  if (!errs.empty()) {
    std::string msg = "invalid engine options:";
    for (const auto& e : errs) msg += "\n  " + e;
    fail(msg);
  }
  c.model_transform = quantize_on_load_transform(args);
  return c;
}

}  // namespace tinfer::cli

// Shared subcommand helpers.
#include "cli/common.h"

#include <algorithm>
#include <thread>

#include "tinfer/error.h"
#include "core/timer.h"
#include "cli/exit_flags.h"
#include "cli/kv_flags.h"
#include "cli/model_names.h"
#include "cli/quantize_flags.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"
#include "model/model_identity.h"

namespace tinfer::cli {

std::vector<OptionSpec> concat(std::vector<OptionSpec> a, const std::vector<OptionSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<OptionSpec> model_options() {
  return concat({
      {"-m,--model", "model file (.gguf, or llama2.c .bin) or a known name (" + known_model_list() + ")", true, "", false, true},
      {"-t,--threads", "threads (0 = all cores)", true, "0"},
      {"--tokenizer", "tokenizer for llama2.c .bin models"},
      {"-c,--ctx", "context length (default: the model's, at most 4096)"},
      {"--packed-cache", "directory for packed-weight caches: later loads of the same model file read its packed "
                         "weights back instead of packing (keyed by the file and the packed-format version)"},
      {"--packed-cache-mode", "map|copy: use the cache file's pages in place (fastest start, shared between "
                              "processes) or copy them into huge pages (decode as fast as after packing)", true, "map"},
  }, quantize_on_load_options());
}

OptionSpec act_quant_option() {
  return {"--act-quant", "block32|token (int8 activation scale per 32-block, or per token: W8A8)", true, "block32"};
}

ActQuant act_quant(const Args& args) {
  ActQuant a = ActQuant::block32;
  if (!args.has("--act-quant")) return a;
  const std::string v = args.str("--act-quant");
  check(parse_act_quant(v, &a), "--act-quant must be block32 or token, got '" + v + "'");
  return a;
}

std::vector<OptionSpec> sampling_options() {
  return {
      {"--temp", "temperature (0 = greedy)", true, "0.8"},
      {"--top-k", "top-k (0 = off)", true, "40"},
      {"--top-p", "top-p", true, "0.95"},
      {"--min-p", "min-p", true, "0.05"},
      {"--repeat-penalty", "repetition penalty (1 = off)", true, "1"},
      {"--presence-penalty", "presence penalty", true, "0"},
      {"--frequency-penalty", "frequency penalty", true, "0"},
      {"--seed", "random seed (-1 = random)", true, "-1"},
  };
}

bool packed_cache_copy(const Args& args) {
  const std::string v = args.has("--packed-cache-mode") ? args.str("--packed-cache-mode") : "map";
  check(v == "map" || v == "copy", "--packed-cache-mode must be map or copy, got '" + v + "'");
  return v == "copy";
}

Loaded load_model(const Args& args) {
  check(args.has("--model"), "missing -m MODEL\n" + args.help());
  Loaded l;
  double t0 = now_s();
  l.model = load_model_file(args);  // with --quantize-on-load: the float model quantized (quantize_flags.h)
  long long threads = args.integer("--threads");
  check(threads >= 0 && threads <= 1024, "--threads must be in [0, 1024]");
  l.pool = std::make_unique<ThreadPool>(int(threads));
  // --skip-plan (when the subcommand declares it): the backend leaves the plan's sub-blocks out of every forward.
  l.backend = create_backend("cpu", *l.model,
                             BackendOptions{.pool = l.pool.get(),
                                            .act_quant = act_quant(args),
                                            .skip = args.has("--skip-plan") ? skip_plan(args, model_identity(*l.model))
                                                                            : LayerSkip{},
                                            .early_exit = early_exit(args),
                                            .packed_cache = args.str("--packed-cache"),
                                            .packed_cache_copy = packed_cache_copy(args)});
  l.load_s = now_s() - t0;
  return l;
}

bool int8_weights(const Model& model) {
  const DType t = model.tensors().layers[0].first_matrix().type;
  return t != DType::F32 && t != DType::F16 && t != DType::BF16;
}

bool bf16_dot_weights(const Model& model) {
  return model.tensors().layers[0].first_matrix().type == DType::BF16 && active_kernels().bf16_gemm != nullptr;
}

int64_t context_length(const Args& args, const Model& model) {
  if (!args.has("--ctx")) return std::min<int64_t>(model.config().ctx_len, 4096);
  long long c = args.integer("--ctx");
  check(c >= 1 && c <= model.config().ctx_len,
        "--ctx must be in [1, " + std::to_string(model.config().ctx_len) + "] (the model's context length)");
  return c;
}

int64_t calibration_context(const Args& args, const Model& model) {
  return args.has("--ctx") ? context_length(args, model) : std::min<int64_t>(model.config().ctx_len, 512);
}

Backend& backend_with(Loaded& l, std::initializer_list<BackendCapability> caps, const char* command) {
  for (BackendCapability cap : caps) l.backend->require(cap, command);
  return *l.backend;
}

SamplingParams sampling_params(const Args& args) {
  SamplingParams p;
  p.temperature = float(args.number("--temp"));
  p.top_k = int(args.integer("--top-k"));
  p.top_p = float(args.number("--top-p"));
  p.min_p = float(args.number("--min-p"));
  p.repetition_penalty = float(args.number("--repeat-penalty"));
  p.presence_penalty = float(args.number("--presence-penalty"));
  p.frequency_penalty = float(args.number("--frequency-penalty"));
  if (const int64_t seed = args.integer("--seed"); seed >= 0) p.seed = static_cast<uint64_t>(seed);  // -1: random
  auto problems = p.validate();
  if (!problems.empty()) {
    std::string msg = "invalid sampling parameters:";
    for (auto& s : problems) msg += "\n  - " + s;
    fail(msg);
  }
  return p;
}

std::vector<int32_t> encode_prompt(const Tokenizer& tok, const std::string& text, bool parse_special) {
  std::vector<int32_t> ids = tok.encode(text, tok.add_bos_by_default() && tok.bos() >= 0, parse_special);
  if (ids.empty()) {
    check(tok.bos() >= 0, "empty prompt and the tokenizer has no BOS token");
    ids.push_back(tok.bos());
  }
  return ids;
}

}  // namespace tinfer::cli

// The quantize-on-load flags (see quantize_flags.h).
#include "cli/quantize_flags.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "tinfer/error.h"
#include "cli/calib_text.h"
#include "core/timer.h"
#include "model/model.h"
#include "quant/type_table.h"
#include "quantize/load_quantize.h"

namespace tinfer::cli {

std::vector<OptionSpec> quantize_on_load_options() {
  return {
      {"--quantize-on-load", load_quant_type_names() +
                                 ": quantize a float model (F32/F16/BF16 GGUF or a Hugging Face directory) at load, "
                                 "as `tinfer quantize --type TYPE` would (RTN; importance-weighted with "
                                 "--quantize-calib)"},
      {"--quantize-calib", "--quantize-on-load: calibration text for importance-weighted RTN (as quantize's --calib)"},
      {"--quantize-calib-tokens", "--quantize-on-load: calibration tokens", true, "4096"},
  };
}

void check_quantize_on_load(const Args& args, std::vector<std::string>& errs) {
  if (!args.has("--quantize-on-load")) {
    if (args.has("--quantize-calib")) errs.push_back("--quantize-calib needs --quantize-on-load TYPE");
    return;
  }
  try {
    parse_load_quant_type(args.str("--quantize-on-load"));
  } catch (const Error& e) {
    errs.push_back(e.what());
  }
  if (args.has("--quantize-calib")) {
    const std::string p = args.str("--quantize-calib");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec) || access(p.c_str(), R_OK) != 0)
      errs.push_back("--quantize-calib: cannot read calibration file '" + p + "'");
    else if (std::filesystem::file_size(p, ec) == 0)
      errs.push_back("--quantize-calib: calibration file '" + p + "' is empty");
  }
  if (args.has("--quantize-calib-tokens") && args.integer("--quantize-calib-tokens") < 2)
    errs.push_back("--quantize-calib-tokens must be at least 2");
}

namespace {

struct LoadQuantize {
  QuantizeOptions opts;
  std::string calib_path;
  int64_t calib_tokens = 4096;
};

LoadQuantize parse(const Args& args) {
  std::vector<std::string> errs;
  check_quantize_on_load(args, errs);
  if (!errs.empty()) fail(errs.front());
  LoadQuantize q;
  q.opts.target = parse_load_quant_type(args.str("--quantize-on-load"));
  q.opts.threads = int(std::clamp<long long>(args.has("--threads") ? args.integer("--threads") : 0, 0, 1024));
  q.opts.progress_delay_s = 2;
  q.opts.summarize_fallbacks = true;
  q.calib_path = args.str("--quantize-calib");
  if (args.has("--quantize-calib-tokens")) q.calib_tokens = args.integer("--quantize-calib-tokens");
  return q;
}

std::unique_ptr<Model> quantize(const Model& source, LoadQuantize q) {
  const double t0 = now_s();
  if (!q.calib_path.empty()) {  // as cmd_quantize: windows capped at the model's context, BOS + the text's tokens
    q.opts.calib.max_tokens = q.calib_tokens;
    q.opts.calib.ctx = std::min<int64_t>(q.opts.calib.ctx, source.config().ctx_len);
    q.opts.calib_tokens = calibration_tokens(source.tokenizer(), CalibText{q.calib_path, q.calib_path, 0}, q.calib_tokens);
  }
  QuantizeResult res;
  auto model = quantize_on_load(source, q.opts, &res);
  int64_t matrices = 0;
  for (const TensorResult& t : res.tensors) matrices += t.shape.size() >= 2;
  std::fprintf(stderr,
               "quantize-on-load: %lld matrices -> %s (%s): %.1f MB -> %.1f MB (%.2f bits per weight) in %.2f s%s\n",
               (long long)matrices, target_type_name(q.opts.target), res.method.c_str(), source.weight_bytes() / 1e6,
               res.data_bytes(false) / 1e6, res.bits_per_weight(true), now_s() - t0,
               res.calib_tokens > 0 ? (", calibrated on " + std::to_string(res.calib_tokens) + " tokens").c_str() : "");
  return model;
}

}  // namespace

std::unique_ptr<Model> load_model_file(const Args& args) {
  check(args.has("--model"), "missing -m MODEL\n" + args.help());
  ModelLoadOptions opts;
  opts.tokenizer_path = args.str("--tokenizer");
  if (!args.has("--quantize-on-load")) return Model::load(args.str("--model"), opts);
  LoadQuantize q = parse(args);  // before loading: a bad type is refused at once
  std::unique_ptr<Model> source = Model::load(args.str("--model"), opts);
  return quantize(*source, std::move(q));
}

std::function<std::unique_ptr<Model>(std::unique_ptr<Model>)> quantize_on_load_transform(const Args& args) {
  if (!args.has("--quantize-on-load")) return {};
  LoadQuantize q = parse(args);
  return [q](std::unique_ptr<Model> source) { return quantize(*source, q); };
}

}  // namespace tinfer::cli

// tinfer quantize IN OUT --type TYPE: a GGUF (F32/F16/BF16, or already quantized: re-quantized with a
// warning) to a standard GGUF of the target type, with the recipe's mixed types (src/quantize/recipe.cpp
// documents the table), --tensor-type overrides, a method (rtn, importance-weighted rtn with --calib,
// gptq, awq, awq+gptq, smoothquant) and a progress bar on stderr. The report on stdout: tensors per
// type, size, bits per weight, method, calibration, time; with --eval FILE, the source and the quantized
// model scored on the same windows (ΔPPL, KLD, top-1: tinfer ppl's statistics). --json: one JSON object.
// Errors: exit 1 with one line naming the problem, and no output file (nor a temporary) left behind.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "core/timer.h"
#include "backend/backend.h"
#include "model/model.h"
#include "text/tokenizer/tokenizer.h"
#include "cli/calib_text.h"
#include "quality/ppl_scoring.h"
#include "quality/quality_stats.h"
#include "quant/type_table.h"
#include "quantize/quantize_model.h"


namespace tinfer::cli {

namespace {

namespace fs = std::filesystem;

void check_output_path(const std::string& in, const std::string& out) {
  std::error_code ec;
  check(!out.empty(), "missing OUT");
  const fs::path o(out);
  check(!fs::is_directory(o, ec), "the output path '" + out + "' is a directory");
  if (fs::exists(o, ec)) check(!fs::equivalent(o, in, ec), "the output path '" + out + "' is the input file");
  check(fs::weakly_canonical(o, ec) != fs::weakly_canonical(in, ec), "the output path '" + out + "' is the input file");
  const fs::path dir = o.parent_path().empty() ? fs::path(".") : o.parent_path();
  check(fs::is_directory(dir, ec), "cannot write '" + out + "': directory '" + dir.string() + "' does not exist");
  check(access(dir.c_str(), W_OK) == 0, "cannot write '" + out + "': directory '" + dir.string() + "' is not writable");
}

// TINFER_QUANTIZE_TEST_HOOK (tests only): "fail-after:N" throws after N tensors are written;
// "sleep-after:N:MS" sleeps MS milliseconds after N tensors (a window to interrupt the process in).
std::function<void(int64_t)> test_hook() {
  const char* h = std::getenv("TINFER_QUANTIZE_TEST_HOOK");
  if (!h || !*h) return {};
  const std::string s = h;
  long long n = 0, ms = 0;
  if (std::sscanf(s.c_str(), "fail-after:%lld", &n) == 1)
    return [n](int64_t done) {
      if (done == n) fail("test hook: failing after " + std::to_string(n) + " tensors");
    };
  if (std::sscanf(s.c_str(), "sleep-after:%lld:%lld", &n, &ms) == 2)
    return [n, ms](int64_t done) {
      if (done == n) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    };
  fail("TINFER_QUANTIZE_TEST_HOOK: unknown value '" + s + "'");
}

struct EvalResult {
  QualitySummary summary;
  int64_t ctx = 0, stride = 0;
  double seconds = 0;
};

// The source and the quantized model over the same windows of the same tokens: every scored position's
// log-probabilities of both, compared as tinfer ppl --kld-base compares a run against its base.
EvalResult evaluate(const Model& source, const Model& quant, const std::string& text, int64_t max_tokens, int64_t ctx,
                    int threads) {
  EvalResult r;
  const double t0 = now_s();
  std::vector<int32_t> seq = scoring_sequence(source.tokenizer(), text, max_tokens);
  check(quant.config().n_vocab == source.config().n_vocab,
        "the quantized model's vocabulary differs from the source's");
  r.ctx = std::min<int64_t>({ctx, source.config().ctx_len, int64_t(seq.size())});
  check(r.ctx >= 2, "--ctx must be at least 2");
  r.stride = r.ctx - 1;
  ThreadPool pool(threads);
  auto base_backend = create_backend("cpu", source, BackendOptions{.pool = &pool});
  auto quant_backend = create_backend("cpu", quant, BackendOptions{.pool = &pool});
  const KvPrecision f32 = KvPrecision::uniform(base_backend->config().n_layers, KvDtype::f32);
  WindowLogits base(*base_backend, r.ctx, f32), mine(*quant_backend, r.ctx, f32);
  const int64_t n_vocab = source.config().n_vocab;
  std::vector<float> base_logits;
  std::vector<double> lp_base(static_cast<size_t>(n_vocab)), lp_quant(static_cast<size_t>(n_vocab));
  QualityAccumulator acc;
  for (const ScoreWindow& w : score_windows(int64_t(seq.size()), r.ctx, r.stride)) {
    base_logits = base.score(seq, w);
    const std::vector<float>& q = mine.score(seq, w);
    for (int64_t t = w.first_target; t < w.end; ++t) {
      const size_t row = size_t(t - w.first_target) * size_t(n_vocab);
      const int32_t top_b = log_softmax(&base_logits[row], n_vocab, lp_base.data());
      const int32_t top_q = log_softmax(&q[row], n_vocab, lp_quant.data());
      acc.add(-lp_base[size_t(seq[t])], -lp_quant[size_t(seq[t])],
              kl_divergence(lp_base.data(), lp_quant.data(), n_vocab), top_b == top_q);
    }
  }
  r.summary = acc.summarize();
  r.seconds = now_s() - t0;
  return r;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out;
  for (int64_t d : s) out += (out.empty() ? "" : "x") + std::to_string(d);
  return out;
}

const char* origin_name(TypeOrigin o) {
  switch (o) {
    case TypeOrigin::recipe:
      return "recipe";
    case TypeOrigin::override:
      return "override";
    case TypeOrigin::fallback:
      return "fallback";
    case TypeOrigin::vector:
      return "1-d";
  }
  return "?";
}

// The command line, checked: everything the run needs before the model is loaded.
struct QuantizeCli {
  std::string in_path, out_path, tokenizer;
  QuantizeOptions opts;
  long long calib_tokens = 0, held_out_tokens = 0;
  bool dry_run = false, json = false;
  std::optional<CalibText> calib;  // --calib, or the default slice when the method needs one
  std::string eval_file, eval_text;  // --eval: the file and its text (empty: no evaluation)
  long long eval_tokens = 0, eval_ctx = 0;
};

std::string target_types_text() {
  std::string types;
  for (DType t : quantize_target_types()) types += (types.empty() ? "" : "|") + std::string(target_type_name(t));
  return types;
}

std::vector<OptionSpec> quantize_options(const std::string& types) {
  const std::string default_calib = std::string(kDefaultCalibFile) + " from byte " +
                                    std::to_string(kDefaultCalibOffset) + " on (under $TINFER_SHARED or ../shared)";
  return {{"--type", "target type: " + types + " (q4_k = the Q4_K_M-style mix; see the recipe below)"},
          {"--method", "rtn | gptq | awq | awq+gptq | smoothquant (q8_0 only)", true, "rtn"},
          {"--calib", "calibration text file (rtn: importance-weighted rounding; default for the other methods: " +
                          default_calib + ")"},
          {"--calib-tokens", "calibration tokens", true, "4096"},
          {"--first-token-weight",
           "weight of each calibration window's first token (the attention sink) in the GPTQ Hessian X^T X", true,
           "1"},
          {"--clip", "clip search: each block's grid fitted to its weights clamped at the ratio (1 down to 0.5) of "
           "least output error on the calibration inputs (methods with calibration)", false},
          {"--sequential",
           "gptq, awq+gptq: calibrate layer by layer on the partly quantized model (each layer sees the inputs "
           "its quantized predecessors give it; about n_layers/2 times the calibration work)",
           false},
          {"--held-out-tokens",
           "awq, awq+gptq: calibration tokens held out from the statistics (the ones that follow them in the text); "
           "the AWQ model is written only if its KLD from the source on them is at most that of the same method "
           "without AWQ's scales (rtn --calib, gptq), else that one is; 0 = off (default 512)"},
          {"--awq-act-quant",
           "awq, awq+gptq: the scale search's loss includes the runtime's int8 activation rounding (per 32-block)",
           false},
          {"--tensor-type",
           "PATTERN=TYPE, repeatable, later wins: matrices whose name matches the glob, or contains PATTERN "
           "as whole dot-separated parts, get TYPE: attn_v=q8_0 'blk.0.*=f16' output.weight=q8_0 blk.3=q8_0",
           true, "", true},
          {"-t,--threads", "threads (0 = all cores)", true, "0"},
          {"--tokenizer", "tokenizer for a llama2.c .bin input (default: tok<vocab>.bin beside it)"},
          {"--eval", "score the source and the quantized model on this text: ΔPPL, KLD, top-1"},
          {"--eval-tokens", "tokens scored by --eval", true, "1000"},
          {"-c,--ctx", "--eval window length", true, "512"},
          {"--dry-run", "print every tensor's planned type and the size; write nothing", false},
          {"--json", "print the report as one JSON object", false}};
}

// Calibration text: --calib, or the default slice when the method needs one. Checked before loading.
std::optional<CalibText> calib_text_of(const Args& args, QuantMethod method) {
  if (args.has("--calib")) {
    const std::string p = args.str("--calib");
    std::error_code ec;
    check(fs::is_regular_file(p, ec) && access(p.c_str(), R_OK) == 0, "cannot read calibration file '" + p + "'");
    check(fs::file_size(p, ec) > 0, "calibration file '" + p + "' is empty");
    return CalibText{p, p, 0};
  }
  if (!method_needs_calibration(method)) return std::nullopt;
  std::string tried;
  const std::string p = find_shared_file(kDefaultCalibFile, &tried);
  check(!p.empty(), "--method " + args.str("--method") + " needs calibration text: give --calib FILE (the default, " +
                        std::string(kDefaultCalibFile) + ", was not found: tried " + tried + ")");
  return CalibText{p + " from byte " + std::to_string(kDefaultCalibOffset), p, kDefaultCalibOffset};
}

QuantizeCli parse_quantize_cli(int argc, char** argv) {
  const std::string types = target_types_text();
  Args args(argc, argv, quantize_options(types),
            "tinfer quantize IN OUT --type TYPE [--method M] [--calib FILE] [--calib-tokens N]\n"
            "       [--tensor-type PATTERN=TYPE ...] [--threads N] [--eval FILE [--eval-tokens N] [--ctx N]] [--json]\n"
            "Recipe (below 8 bits): output head and embedding q6_k; attn_v and the first/last 1/8 of ffn_down one\n"
            "step up (q4_k: q6_k); 1-D tensors f32; rows a type's block does not divide fall back\n"
            "(q2_k/q3_k->q4_0, q4_k->q5_0, q5_k->q5_1, q6_k->q8_0, 32-blocks->f16).",
            2);
  check(args.positionals().size() == 2, "expected IN and OUT (tinfer quantize IN OUT --type TYPE)\n" + args.help());
  QuantizeCli c;
  c.in_path = args.positionals()[0], c.out_path = args.positionals()[1];
  check(args.has("--type"), "missing --type (one of " + types + ")");
  QuantizeOptions& opts = c.opts;
  opts.target = parse_target_type(args.str("--type"));
  check(parse_quant_method(args.str("--method"), &opts.method),
        "unknown --method '" + args.str("--method") + "' (expected rtn, gptq, awq, awq+gptq or smoothquant)");
  for (const std::string& o : args.all("--tensor-type")) opts.overrides.push_back(parse_override(o));
  // (clamped into int's range first: out of [0, 1024] stays out, and validate() names it)
  opts.threads = int(std::clamp<long long>(args.integer("--threads"), -1, 1025));
  c.calib_tokens = args.integer("--calib-tokens");
  opts.calib.max_tokens = c.calib_tokens;
  opts.calib.first_token_weight = args.number("--first-token-weight");
  opts.clip = args.flag("--clip");
  opts.sequential = args.flag("--sequential");
  opts.awq_act_quant = args.flag("--awq-act-quant");
  const bool awq = opts.method == QuantMethod::awq || opts.method == QuantMethod::awq_gptq;
  c.held_out_tokens = args.has("--held-out-tokens") ? args.integer("--held-out-tokens") : 512;
  check(c.held_out_tokens == 0 || c.held_out_tokens >= 2, "--held-out-tokens must be 0 or at least 2");
  check(awq || !args.has("--held-out-tokens"), "--held-out-tokens needs --method awq or awq+gptq");
  if (!awq) c.held_out_tokens = 0;
  if (const std::vector<std::string> e = opts.validate(); !e.empty()) fail(e.front());
  c.dry_run = args.flag("--dry-run"), c.json = args.flag("--json");
  if (!c.dry_run) check_output_path(c.in_path, c.out_path);
  c.calib = calib_text_of(args, opts.method);
  c.eval_tokens = args.integer("--eval-tokens"), c.eval_ctx = args.integer("--ctx");
  if (args.has("--eval")) {
    check(c.eval_tokens >= 1, "--eval-tokens must be at least 1");
    check(c.eval_ctx >= 2, "--ctx must be at least 2");
    c.eval_file = args.str("--eval");
    c.eval_text = read_text_file(c.eval_file);
    check(!c.eval_text.empty(), "evaluation file '" + c.eval_file + "' is empty");
  }
  c.tokenizer = args.str("--tokenizer");
  return c;
}


// --dry-run: every tensor's planned type and the total size; nothing written.
void dry_run_report(const Model& source, const QuantizeCli& c, nlohmann::json& j) {
  std::vector<std::string> warnings;
  const auto plan = plan_tensor_types(source.gguf(), c.opts.target, c.opts.overrides, &warnings);
  for (const auto& w : warnings) std::fprintf(stderr, "quantize: warning: %s\n", w.c_str());
  uint64_t bytes = 0;
  int64_t elems = 0;
  for (const TensorChoice& t : plan) {
    const uint64_t b = row_bytes(t.type, t.shape[0]) * uint64_t(t.rows());
    bytes += b;
    elems += t.elements();
    if (!c.json)
      std::printf("%-28s %-12s %-5s -> %-5s %-8s %s\n", t.name.c_str(), shape_text(t.shape).c_str(),
                  type_traits(t.source_type).name, type_traits(t.type).name, origin_name(t.origin), t.note.c_str());
    j["tensors"].push_back({{"name", t.name},
                            {"shape", t.shape},
                            {"source_type", type_traits(t.source_type).name},
                            {"type", type_traits(t.type).name},
                            {"origin", origin_name(t.origin)},
                            {"bytes", b}});
  }
  j["data_bytes"] = bytes;
  j["bpw_all"] = elems ? 8.0 * double(bytes) / double(elems) : 0.0;
  if (c.json)
    std::printf("%s\n", j.dump().c_str());
  else
    std::printf("tensor data    %.2f MB, %.3f bits per weight (all tensors)\n", bytes / 1e6, j["bpw_all"].get<double>());
}

// The written file's tensors counted by type and by how their type was chosen.
struct TensorCounts {
  std::map<std::string, int> per_type;
  int fallback = 0, override = 0, copied = 0;
  explicit TensorCounts(const QuantizeResult& res) {
    for (const TensorResult& t : res.tensors) {
      ++per_type[type_traits(t.type).name];
      fallback += t.origin == TypeOrigin::fallback;
      override += t.origin == TypeOrigin::override;
      copied += t.copied;
    }
  }
};

double bpw_file(const QuantizeResult& res) {
  return 8.0 * double(res.file_bytes) / double(std::max<int64_t>(1, res.elements(false)));
}

// The report as JSON (j already holds the input, output and type fields).
void result_json(const QuantizeCli& c, const QuantizeResult& res, const std::optional<EvalResult>& ev,
                 nlohmann::json& j) {
  const TensorCounts n(res);
  j["method"] = res.method;
  j["calibration"] = c.calib ? nlohmann::json{{"text", c.calib->label},
                                              {"tokens", res.calib_tokens},
                                              {"first_token_weight", c.opts.calib.first_token_weight}}
                             : nlohmann::json();
  j["clip"] = c.opts.clip;
  j["sequential"] = c.opts.sequential;
  j["awq_act_quant"] = c.opts.awq_act_quant;
  j["requantized"] = res.requantized;
  j["warnings"] = res.warnings;
  j["tensors_by_type"] = n.per_type;
  j["n_tensors"] = res.tensors.size();
  j["n_fallback"] = n.fallback;
  j["n_override"] = n.override;
  j["n_copied"] = n.copied;
  j["file_bytes"] = res.file_bytes;
  j["data_bytes"] = res.data_bytes(false);
  j["weight_bytes"] = res.data_bytes(true);
  j["elements"] = res.elements(false);
  j["weight_elements"] = res.elements(true);
  j["bpw_weights"] = res.bits_per_weight(true);
  j["bpw_all"] = res.bits_per_weight(false);
  j["bpw_file"] = bpw_file(res);
  j["seconds"] = {{"total", res.total_s}, {"calibration", res.calib_s}, {"quantization", res.quantize_s}};
  j["folds"] = nlohmann::json::array();
  for (const ScaleFold& f : res.folds)
    j["folds"].push_back({{"group", f.group}, {"alpha", f.alpha}, {"err_plain", f.err_plain},
                          {"err_scaled", f.err_scaled}, {"folded", f.folded}, {"note", f.note}});
  if (res.held_out)
    j["held_out"] = {{"tokens", res.held_out->tokens},       {"kld_awq", res.held_out->kl_awq},
                     {"kld_baseline", res.held_out->kl_baseline}, {"kept_awq", res.held_out->kept_awq},
                     {"awq_method", res.held_out->awq_method}, {"baseline_method", res.held_out->baseline_method}};
  j["tensors"] = nlohmann::json::array();
  for (const TensorResult& t : res.tensors)
    j["tensors"].push_back({{"name", t.name}, {"shape", t.shape}, {"source_type", type_traits(t.source_type).name},
                            {"type", type_traits(t.type).name}, {"origin", origin_name(t.origin)}, {"how", t.how},
                            {"bytes", t.bytes}});
  if (ev) {
    j["eval"] = quality_json(ev->summary, ev->ctx, ev->stride);
    j["eval"]["file"] = c.eval_file;
    j["eval"]["seconds"] = ev->seconds;
  }
}

// A summary of the AWQ / SmoothQuant scale searches; every group's alpha and errors are in the JSON report.
void print_folds(const std::vector<ScaleFold>& folds) {
  int n_folded = 0;
  double a_lo = 1e9, a_hi = -1e9, e_plain = 0, e_scaled = 0;
  std::map<std::string, int> skipped;  // reason -> groups
  for (const ScaleFold& f : folds) {
    if (!f.folded) {
      ++skipped[f.note.empty() ? "no alpha beat plain rounding" : f.note];
      continue;
    }
    ++n_folded;
    a_lo = std::min(a_lo, f.alpha), a_hi = std::max(a_hi, f.alpha);
    e_plain += f.err_plain, e_scaled += f.err_scaled;
  }
  std::printf("scale folds    %d of %zu groups folded", n_folded, folds.size());
  if (n_folded) std::printf(" (alpha %.2f..%.2f; sample output error %.4g -> %.4g summed)", a_lo, a_hi, e_plain, e_scaled);
  std::printf("\n");
  for (const auto& [why, k] : skipped) std::printf("  not folded: %d x %s\n", k, why.c_str());
}

void print_held_out(const HeldOutChoice& h) {
  std::printf("held out       %lld calibration tokens: KLD %.5f %s, %.5f %s: wrote %s\n", (long long)h.tokens, h.kl_awq,
              h.awq_method.c_str(), h.kl_baseline, h.baseline_method.c_str(),
              h.kept_awq ? "the AWQ model" : "the model without AWQ's scales");
}

// The input's size: a file's, or the sum of the regular files directly in a Hugging Face checkpoint directory
// (fs::file_size of a directory is an error, which read as 2^64 - 1). 0 when unreadable.
uint64_t bytes_on_disk(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    const uintmax_t n = fs::file_size(path, ec);
    return ec ? 0 : uint64_t(n);
  }
  uint64_t total = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(path, ec))
    if (e.is_regular_file(ec)) {
      const uintmax_t n = e.file_size(ec);
      if (!ec) total += uint64_t(n);
    }
  return total;
}

// The report as text.
void print_report(const QuantizeCli& c, const QuantizeResult& res, const std::optional<EvalResult>& ev,
                  uint64_t source_bytes) {
  const TensorCounts n(res);
  std::string counts;
  for (const auto& [name, k] : n.per_type) counts += (counts.empty() ? "" : ", ") + name + " " + std::to_string(k);
  const std::string calib_label =
      c.calib ? c.calib->label + ", " + std::to_string(res.calib_tokens) + " tokens" : std::string("none");
  const DType target = c.opts.target;
  std::printf("quantized      %s -> %s\n", c.in_path.c_str(), c.out_path.c_str());
  std::printf("type           %s (general.file_type %u = %s)%s\n", target_type_name(target), llama_file_type(target),
              llama_file_type_name(target), res.requantized ? ", re-quantized from a quantized source" : "");
  std::printf("method         %s; calibration: %s\n", res.method.c_str(), calib_label.c_str());
  std::printf("tensors        %zu: %s (%d fallback, %d override, %d copied)\n", res.tensors.size(), counts.c_str(),
              n.fallback, n.override, n.copied);
  const double ratio = res.file_bytes ? double(source_bytes) / double(res.file_bytes) : 0.0;
  std::printf("size           %.2f MB -> %.2f MB (%.2fx %s)\n", source_bytes / 1e6, res.file_bytes / 1e6,
              ratio >= 1 ? ratio : 1 / ratio, ratio >= 1 ? "smaller" : "larger");
  std::printf("bits/weight    %.3f (matrices), %.3f (all tensors), %.3f (whole file)\n", res.bits_per_weight(true),
              res.bits_per_weight(false), bpw_file(res));
  std::printf("time           %.2f s (calibration %.2f s, quantization %.2f s)\n", res.total_s, res.calib_s,
              res.quantize_s);
  if (!res.folds.empty()) print_folds(res.folds);
  if (res.held_out) print_held_out(*res.held_out);
  if (ev) {
    std::printf("eval           %s, %lld tokens, windows of %lld (source vs quantized, fast path, %.1f s)\n",
                c.eval_file.c_str(), (long long)ev->summary.n, (long long)ev->ctx, ev->seconds);
    print_quality_lines(ev->summary, "quant");
  }
}

// The calibration tokens read for --calib-tokens + --held-out-tokens split into the statistics' (first) and the
// held-out ones (after them). A text too short for both keeps --calib-tokens' share in proportion.
void split_held_out(QuantizeCli& c) {
  if (c.held_out_tokens <= 0) return;
  std::vector<int32_t>& t = c.opts.calib_tokens;
  const int64_t n = int64_t(t.size()), want = c.calib_tokens + c.held_out_tokens;
  const int64_t held = n >= want ? c.held_out_tokens : n * c.held_out_tokens / want;
  if (held < 2 || n - held < 2) return;  // too short to hold any out: AWQ as searched
  c.opts.held_out_tokens.assign(t.end() - held, t.end());
  t.resize(size_t(n - held));
}


}  // namespace

int cmd_quantize(int argc, char** argv) {
  QuantizeCli c = parse_quantize_cli(argc, argv);
  ModelLoadOptions load_opts;
  load_opts.tokenizer_path = c.tokenizer;
  std::unique_ptr<Model> source = Model::load(c.in_path, load_opts);
  if (c.calib) {
    c.opts.calib.ctx = std::min<int64_t>(c.opts.calib.ctx, source->config().ctx_len);
    c.opts.calib_tokens = calibration_tokens(source->tokenizer(), *c.calib, c.calib_tokens + c.held_out_tokens);
    split_held_out(c);
  }
  nlohmann::json j;
  j["input"] = c.in_path;
  j["output"] = c.out_path;
  j["type"] = target_type_name(c.opts.target);
  j["file_type"] = llama_file_type(c.opts.target);
  j["file_type_name"] = llama_file_type_name(c.opts.target);
  const uint64_t source_bytes = bytes_on_disk(c.in_path);
  j["source_bytes"] = source_bytes;
  if (c.dry_run) {
    dry_run_report(*source, c, j);
    return 0;
  }
  c.opts.after_tensor = test_hook();
  const QuantizeResult res = quantize_model(*source, c.out_path, c.opts);
  std::optional<EvalResult> ev;
  if (!c.eval_text.empty()) {
    try {
      std::unique_ptr<Model> quant = Model::load(c.out_path);
      ev = evaluate(*source, *quant, c.eval_text, c.eval_tokens, c.eval_ctx, c.opts.threads);
    } catch (const Error& e) {
      fail("wrote '" + c.out_path + "', but --eval failed: " + e.what());
    }
  }
  if (c.json) {
    result_json(c, res, ev, j);
    std::printf("%s\n", j.dump().c_str());
  } else {
    print_report(c, res, ev, source_bytes);
  }
  return 0;
}

}  // namespace tinfer::cli

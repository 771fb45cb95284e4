// tinfer bench ladder: the playbook's case study as one command. Every rung runs the same workload on a fresh
// engine configured by the ladder table (ladder_rungs.h, cumulative), and its quality is scored on a real
// model's next-token distributions against rung 0 (perplexity, KL divergence, top-1 agreement). Prints a
// Markdown table; --json one object on the last line (scripts/plot_ladder.py draws it). Weight rungs quantize
// the base models once each (src/quantize, into a temporary directory removed at exit).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/bench_load.h"
#include "cli/calib_text.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "engine/session.h"
#include "cli/engine_flags.h"
#include "cli/exit_flags.h"
#include "plans/kv_plan_file.h"
#include "bench/ladder_rungs.h"
#include "model/model.h"
#include "model/model_identity.h"
#include "text/tokenizer/tokenizer.h"
#include "quality/quality_stats.h"
#include "quant/type_table.h"
#include "quantize/quantize_model.h"
#include "quantize/recipe.h"
#include "plans/skip_plan_file.h"

namespace tinfer::cli {

namespace {

// Next-token log-probabilities of `tokens` under one KV element type: [n-1][n_vocab] in double (row i predicts
// token i+1), and each row's argmax.
struct LogProbs {
  std::vector<double> lp;
  std::vector<int32_t> argmax;
};

LogProbs logprobs(Backend& be, const std::vector<int32_t>& tokens, const KvPrecision& dtype, int64_t chunk = 512) {
  Session s(be, int64_t(tokens.size()), dtype);
  std::vector<float> logits;
  s.feed_all_logits(tokens, logits, chunk);
  const size_t v = size_t(be.config().n_vocab), rows = tokens.size() - 1;
  LogProbs out;
  out.lp.resize(rows * v);
  for (size_t r = 0; r < rows; ++r) out.argmax.push_back(log_softmax(&logits[r * v], int64_t(v), &out.lp[r * v]));
  return out;
}

// This rung's distributions against rung 0's on the same tokens (tinfer ppl --kld-base's statistics).
QualitySummary score(const LogProbs& base, const LogProbs& lp, const std::vector<int32_t>& tokens, size_t v) {
  QualityAccumulator acc;
  for (size_t r = 0; r + 1 < tokens.size(); ++r) {
    const double* b = &base.lp[r * v];
    const double* p = &lp.lp[r * v];
    const int32_t t = tokens[r + 1];
    acc.add(-b[t], -p[t], kl_divergence(b, p, int64_t(v)), base.argmax[r] == lp.argmax[r]);
  }
  return acc.summarize();
}

std::vector<int32_t> quality_tokens(const Model& m, const std::string& path, int n) {
  std::ifstream in(path, std::ios::binary);
  check(bool(in), "cannot read the quality text '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<int32_t> t;
  if (m.tokenizer().bos() >= 0) t.push_back(m.tokenizer().bos());
  for (int32_t id : m.tokenizer().encode(ss.str(), false)) t.push_back(id);
  check(int(t.size()) >= n, "the quality text encodes to fewer than " + std::to_string(n) + " tokens");
  t.resize(size_t(n));
  return t;
}

// The quantized copies of the weight rungs: one file per (model, TYPE:METHOD), made on first use.
class RungWeights {
 public:
  RungWeights(int threads, int64_t calib_tokens) : threads_(threads), calib_tokens_(calib_tokens) {
    dir_ = std::filesystem::temp_directory_path() / ("tinfer-ladder-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  ~RungWeights() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // `src` quantized per `spec` ("TYPE[:METHOD]"); `calibrated` false forces rtn (the speed model: a file's
  // speed depends on its types, not on the method that chose its codes).
  std::string get(const std::string& src, const std::string& spec, bool calibrated) {
    const size_t colon = spec.find(':');
    QuantizeOptions o;
    o.target = parse_target_type(spec.substr(0, colon));
    const std::string method = colon == std::string::npos || !calibrated ? "rtn" : spec.substr(colon + 1);
    check(parse_quant_method(method, &o.method), "ladder: unknown method '" + method + "'");
    const std::string key = src + "|" + target_type_name(o.target) + "|" + method;
    if (auto it = done_.find(key); it != done_.end()) return it->second;
    const std::string out = (dir_ / ("w" + std::to_string(done_.size()) + ".gguf")).string();
    auto m = Model::load(src, {});
    if (method_needs_calibration(o.method))
      o.calib_tokens = calibration_tokens(m->tokenizer(), default_calib_text(), calib_tokens_);
    o.threads = threads_;
    o.log = nullptr;
    const QuantizeResult r = quantize_model(*m, out, o);
    std::fprintf(stderr, "ladder: %s -> %s %s, %.2f bits/weight (matrices), %.1f s\n", src.c_str(),
                 target_type_name(o.target), r.method.c_str(), r.bits_per_weight(true), r.total_s);
    return done_[key] = out;
  }

 private:
  std::filesystem::path dir_;
  int threads_;
  int64_t calib_tokens_;
  std::map<std::string, std::string> done_;
};

std::string shared_dir() {
  const char* env = std::getenv("TINFER_SHARED");
  return env && *env ? env : "../shared";
}

std::vector<OptionSpec> ladder_options() {
  return concat(concat(model_options(), engine_options()),
                {{"--requests", "requests per rung", true, "32"},
                 {"--input-len", "synthetic prompt tokens (BOS included)", true, "128"},
                 {"--shared-prefix", "the same N-token system prompt in every prompt", true, "64"},
                 {"--output-dist", "fixed|longtail (lognormal, median 64)", true, "longtail"},
                 {"--output-len", "generated tokens per request (fixed)", true, "128"},
                 {"--max-tokens", "cap on drawn output lengths", true, "256"},
                 {"--quality-model", "model scored for quality (default: the default SmolLM2 model)"},
                 {"--quality-text", "text scored for quality (default: shared corpus tinystories)"},
                 {"--quality-tokens", "tokens of the quality text scored per rung", true, "256"},
                 {"--quality-kv-plan", "the quality model's KV plan for the plan rung (default: --kv-plan)"},
                 {"--calib-tokens", "calibration tokens of the GPTQ/AWQ/SmoothQuant rungs", true, "2048"},
                 {"--ladder-skip-plans", "the two skip plan rungs' plans, tighter budget first (calibrate-skip "
                                         "for -m; the quality model must be -m)"},
                 {"--ladder-exit", "the two early-exit rungs' thresholds, higher first (calibrate-exit)"},
                 {"--ladder-exit-layers", "exit layers of the early-exit rungs (default: 2/3 of the depth)"},
                 {"--tiny", "stories260K, a few requests: runs in seconds (tests)", false},
                 {"--seed", "workload seed", true, "1"},
                 {"--json", "print one JSON object on the last line", false}});
}

// The command line, checked: the base engine, the model-side rungs' plans and thresholds, the quality side, the
// workload (--tiny: a few short requests).
struct LadderOptions {
  EngineConfig base;
  KvPrecision speed_plan;  // --kv-plan: the plan rung's, not the base's
  std::vector<std::string> skip_plans;
  std::vector<float> exit_thresholds;
  std::vector<int32_t> exit_layers;
  std::string qmodel_path, qtext, quality_kv_plan;
  int qn = 0;
  int64_t calib_tokens = 0;
  WorkloadSpec ws;
  bool json = false;
};

std::vector<float> parse_exit_thresholds(const std::string& list) {
  std::vector<float> out;
  std::stringstream ss(list);
  for (std::string t; std::getline(ss, t, ',');) {
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    check(!t.empty() && end && *end == '\0' && v >= 0 && v <= 1, "--ladder-exit lists probabilities, got '" + t + "'");
    out.push_back(float(v));
  }
  return out;
}

WorkloadSpec ladder_workload(const Args& args, bool tiny) {
  WorkloadSpec ws;
  ws.requests = tiny ? 16 : int(args.integer("--requests"));
  ws.input_len = tiny ? 32 : int(args.integer("--input-len"));
  ws.shared_prefix = tiny ? 16 : int(args.integer("--shared-prefix"));
  ws.output_dist = args.str("--output-dist");
  ws.output_len = tiny ? 16 : int(args.integer("--output-len"));
  ws.max_tokens = tiny ? 96 : int(args.integer("--max-tokens"));
  ws.seed = uint64_t(args.integer("--seed"));
  return ws;
}

LadderOptions parse_ladder(int argc, char** argv) {
  Args args(argc, argv, ladder_options(),
            "tinfer bench ladder -m MODEL [engine flags] [--requests N] [--input-len L] [--shared-prefix N] "
            "[--output-dist fixed|longtail] [--quality-model M] [--quality-text FILE] [--tiny] [--json]\n"
            "(-c default: the workload's longest request, --input-len + --max-tokens)");
  const bool tiny = args.flag("--tiny");
  LadderOptions o;
  EngineConfig& base = o.base;
  check(!args.has("--quantize-on-load"), "bench ladder: --quantize-on-load is not supported (the rungs choose their own "
                                         "weights); quantize the file with `tinfer quantize` and pass it with -m");
  base = engine_config(args);
  base.verbose = false;
  // --kv-plan is the plan rung's, not the base's: every other rung sets its own KV types.
  o.speed_plan = KvPrecision{base.plans.kv_layers, base.plans.kv_k_smooth};
  base.plans.kv_layers.clear(), base.plans.kv_k_smooth.clear();
  check(base.plans.skip.empty() && !base.plans.early_exit.enabled(),
        "bench ladder sets each rung's layer skipping and early exit: give --ladder-skip-plans and --ladder-exit "
        "instead of --skip-plan and --early-exit");
  if (args.has("--ladder-skip-plans")) {
    std::stringstream ss(args.str("--ladder-skip-plans"));
    for (std::string p; std::getline(ss, p, ',');) o.skip_plans.push_back(p);
  }
  if (args.has("--ladder-exit")) o.exit_thresholds = parse_exit_thresholds(args.str("--ladder-exit"));
  if (args.has("--ladder-exit-layers")) o.exit_layers = parse_exit_layers(args.str("--ladder-exit-layers"));
  o.qmodel_path = args.has("--quality-model") ? args.str("--quality-model")
                  : tiny                      ? base.model_path
                                              : "models/SmolLM2-135M-Instruct.Q4_1.gguf";
  o.qtext = args.has("--quality-text") ? args.str("--quality-text") : shared_dir() + "/corpus/tinystories-valid-head.txt";
  o.qn = tiny ? 64 : int(args.integer("--quality-tokens"));
  o.ws = ladder_workload(args, tiny);
  // The context: -c, else the workload's longest request. A number either way: the rungs without chunked prefill
  // raise their step budget to it (a prompt prefills in one step), which "the model's context" (0) cannot give.
  if (!args.has("--ctx")) base.scheduler.max_model_len = o.ws.input_len + o.ws.max_tokens;
  o.calib_tokens = tiny ? 256 : args.integer("--calib-tokens");
  if (args.has("--quality-kv-plan")) o.quality_kv_plan = args.str("--quality-kv-plan");
  o.json = args.flag("--json");
  return o;
}

// Quality: one model, one text, every rung's KV element type; rung 0 is the base distribution. The model scored
// follows the weight rungs (quantized copies) and goes back to the files as stored for the model-side rungs.
struct QualitySide {
  const LadderOptions& o;
  std::unique_ptr<Model> model;
  std::unique_ptr<Backend> backend;
  RungWeights weights;
  std::string cur_weights = "as stored";
  std::vector<int32_t> tokens;
  KvPrecision plan;  // the quality model's KV plan for the plan rung (empty: none fits it)
  LogProbs base_lp;

  explicit QualitySide(const LadderOptions& opts) : o(opts), weights(opts.base.threads, opts.calib_tokens) {
    load(o.qmodel_path);
    tokens = quality_tokens(*model, o.qtext, o.qn);
    plan = o.speed_plan;
    if (!o.quality_kv_plan.empty()) {
      const KvPlanFile p = read_kv_plan(o.quality_kv_plan);
      check_kv_plan_model(p, model_identity(*model), "--quality-kv-plan '" + o.quality_kv_plan + "'");
      plan = p.precision;
    } else if (!o.speed_plan.layers.empty() && o.qmodel_path != o.base.model_path) {
      plan = {};  // the -m model's plan does not fit another model
    }
  }
  void load(const std::string& path) {
    model = Model::load(path, {});
    backend = create_backend("cpu", *model, BackendOptions{.threads = o.base.threads});
  }
  size_t n_vocab() const { return size_t(model->config().n_vocab); }
};

// Why a rung cannot run with the options given (nullptr: it can).
const char* model_side_missing(const LadderRung& rung, const LadderOptions& o) {
  if (rung.skip_plan >= 0 && size_t(rung.skip_plan) >= o.skip_plans.size())
    return "skipped: give --ladder-skip-plans TIGHT,LOOSE from tinfer calibrate-skip";
  if (rung.skip_plan >= 0 && o.qmodel_path != o.base.model_path)
    return "skipped: a skip plan is -m's; give --quality-model the -m model";
  if (rung.exit_threshold >= 0 && size_t(rung.exit_threshold) >= o.exit_thresholds.size())
    return "skipped: give --ladder-exit HIGH,LOW from tinfer calibrate-exit";
  return nullptr;
}

nlohmann::json skipped_rung(size_t k, const LadderRung& rung, const char* why) {
  std::printf("| %zu | %s | %s | %s |\n", k, rung.name, rung.claim, why);
  return {{"rung", k}, {"technique", rung.name}, {"skipped", why}};
}

// One measured rung: the engine it ran on, the load's result, the quality against rung 0.
struct RungResult {
  const Engine& engine;
  const LoadResult& r;
  const QualitySummary& q;
  double tok_s, base_tok_s, peak_kv_mib;
  const KvPrecision& kvp;
  const std::string& weights;
};

void print_rung_row(size_t k, const RungResult& m) {
  const LoadResult& r = m.r;
  const QualitySummary& q = m.q;
  std::printf("| %zu | %s | %s | %.1f (%.2fx) | %.1f | %.2f | %.1f | %.1f | %d | %.4f (%+.4f) | %.2e / %.2e | %.1f%% |\n",
              k, kLadder[k].name, kLadder[k].claim, m.tok_s, m.tok_s / m.base_tok_s, double(r.gen_tokens) / r.wall_s,
              percentile(r.ttft, 99), 1e3 * percentile(r.tpot, 99), m.peak_kv_mib, r.stats.running_peak, q.ppl_this,
              q.dppl, q.kl_mean, q.kl_max, 100 * q.top1);
  std::fflush(stdout);
}

nlohmann::json rung_json(size_t k, const RungResult& m) {
  const EngineConfig& applied = m.engine.config();
  const ModelConfig& mc = m.engine.model().config();
  const LoadResult& r = m.r;
  const QualitySummary& q = m.q;
  return {{"rung", k},
          {"technique", kLadder[k].name},
          {"claim", kLadder[k].claim},
          {"applied",
           {{"batching", batching_mode_name(applied.batching)},
            {"kv_layout", kv::kv_layout_name(applied.kv.layout)},
            {"kv_dtype", m.kvp.describe()},
            {"kv_bytes_per_token", m.kvp.bytes_per_token(mc.n_kv_heads, mc.head_dim)},
            {"prefix_caching", applied.kv.prefix_caching},
            {"chunked_prefill", applied.scheduler.chunked_prefill},
            {"weights", m.weights},
            {"spec", spec_mode_name(applied.spec.mode)},
            {"skip", applied.plans.skip.describe()},
            {"early_exit", applied.plans.early_exit.describe(mc.n_layers)}}},
          {"early_exit_share", r.stats.early_exit_eligible > 0
                                   ? double(r.stats.early_exit_exited) / double(r.stats.early_exit_eligible)
                                   : 0.0},
          {"weight_bytes", double(m.engine.model().weight_bytes())},
          {"total_tok_s", m.tok_s},
          {"gen_tok_s", double(r.gen_tokens) / r.wall_s},
          {"ttft_p99_s", percentile(r.ttft, 99)},
          {"tpot_p99_s", percentile(r.tpot, 99)},
          {"peak_kv_mib", m.peak_kv_mib},
          {"max_running", r.stats.running_peak},
          {"padding_tokens", r.stats.padding_tokens},
          {"prefix_hit_rate", r.stats.prefix_hit_rate},
          {"kv_capacity_tokens", r.stats.kv_capacity_tokens},
          {"ppl", q.ppl_this},
          {"dppl", q.dppl},
          {"dppl_se", q.dppl_se},
          {"kld_mean", q.kl_mean},
          {"kld_max", q.kl_max},
          {"top1", q.top1}};
}

// The ladder walked rung by rung: cfg accumulates the rungs' switches.
class Ladder {
 public:
  explicit Ladder(const LadderOptions& o) : o_(o), quality_(o), cfg_(o.base), ws_(o.ws) {}

  nlohmann::json rung(size_t k) {
    kLadder[k].apply(cfg_);
    const LadderRung& rung = kLadder[k];
    if (const char* why = model_side_missing(rung, o_)) return skipped_rung(k, rung, why);
    const bool model_side = rung.skip_plan >= 0 || rung.exit_threshold >= 0;
    if (model_side && quality_.cur_weights != "as stored") {  // plans are made for the files as stored: back to them
      quality_.cur_weights = "as stored";
      cfg_.model_path = o_.base.model_path;
      quality_.load(o_.qmodel_path);
    }
    LayerSkip rung_skip;
    EarlyExit rung_exit;
    if (rung.skip_plan >= 0)
      rung_skip = load_skip_plan(o_.skip_plans[size_t(rung.skip_plan)], model_identity(*quality_.model));
    if (rung.exit_threshold >= 0) rung_exit = EarlyExit{o_.exit_layers, o_.exit_thresholds[size_t(rung.exit_threshold)]};
    cfg_.plans.skip = rung_skip, cfg_.plans.early_exit = rung_exit;  // alternatives: each model-side rung replaces the last
    if (rung.kv_plan) {
      if (o_.speed_plan.layers.empty() || quality_.plan.layers.empty())
        return skipped_rung(k, rung, "skipped: give --kv-plan (and --quality-kv-plan for the quality model) from tinfer calibrate-kv");
      cfg_.plans.kv_layers = o_.speed_plan.layers, cfg_.plans.kv_k_smooth = o_.speed_plan.k_smooth;
    }
    if (const char* spec = rung.weights) {  // this rung's weights: quantized copies of the base files
      quality_.cur_weights = spec;
      const std::string qpath = quality_.weights.get(o_.qmodel_path, spec, true);
      cfg_.model_path = o_.base.model_path == o_.qmodel_path ? qpath : quality_.weights.get(o_.base.model_path, spec, false);
      quality_.load(qpath);
    }
    return measure(k, model_side ? BackendOptions{.threads = o_.base.threads, .skip = rung_skip, .early_exit = rung_exit}
                                 : std::optional<BackendOptions>{});
  }

 private:
  // Runs the workload on this rung's engine and scores the quality model (with `side`: this rung's skip plan or
  // early exit).
  nlohmann::json measure(size_t k, const std::optional<BackendOptions>& side_opts) {
    EngineConfig run = cfg_;
    if (!run.scheduler.chunked_prefill) run.scheduler.max_batched_tokens = std::max(run.scheduler.max_batched_tokens, run.scheduler.max_model_len);
    auto engine = Engine::create(run);
    ws_.max_model_len = engine->max_model_len();
    const Workload w = make_workload(ws_, engine->tokenizer(), int(engine->model().config().n_vocab));
    SamplingParams sp;
    sp.temperature = 0;
    const LoadResult r = run_load(*engine, w, 0, sp);
    const EngineConfig& applied = engine->config();
    const ModelConfig& mc = engine->model().config();
    const KvPrecision kvp = applied.kv_precision(mc.n_layers);
    const double bytes_per_token = double(kvp.bytes_per_token(mc.n_kv_heads, mc.head_dim));
    const double peak_kv_mib = double(r.stats.kv_blocks_peak) * applied.kv.block_size * bytes_per_token / 1048576.0;
    const double tok_s = double(r.prompt_tokens + r.gen_tokens) / r.wall_s;
    if (k == 0) base_tok_s_ = tok_s;

    const KvPrecision qkvp = kLadder[k].kv_plan ? quality_.plan : applied.kv_precision(quality_.model->config().n_layers);
    std::unique_ptr<Backend> side;  // the quality model with this rung's skip plan or early exit
    if (side_opts) side = create_backend("cpu", *quality_.model, *side_opts);
    const LogProbs lp = logprobs(side ? *side : *quality_.backend, quality_.tokens, qkvp,
                                 side_opts && side_opts->early_exit.enabled() ? 1 : 512);
    if (k == 0) quality_.base_lp = lp;
    const QualitySummary q = score(quality_.base_lp, lp, quality_.tokens, quality_.n_vocab());
    const RungResult m{*engine, r, q, tok_s, base_tok_s_, peak_kv_mib, kvp, quality_.cur_weights};
    print_rung_row(k, m);
    return rung_json(k, m);
  }

  const LadderOptions& o_;
  QualitySide quality_;
  EngineConfig cfg_;
  WorkloadSpec ws_;
  double base_tok_s_ = 0;
};

}  // namespace

int cmd_bench_ladder(int argc, char** argv) {
  const LadderOptions o = parse_ladder(argc, argv);
  Ladder ladder(o);
  nlohmann::json rungs = nlohmann::json::array();
  std::printf("| rung | technique | claimed | total tok/s | gen tok/s | P99 TTFT s | P99 TPOT ms | peak KV MiB | "
              "max seqs | PPL (dPPL) | KLD mean / max | top-1 |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t k = 0; k < std::size(kLadder); ++k) rungs.push_back(ladder.rung(k));
  const WorkloadSpec& ws = o.ws;
  std::printf("workload: %d requests, prompts %d tokens (%d shared), outputs %s (cap %d); quality: %s on %d tokens "
              "of %s\n",
              ws.requests, ws.input_len, ws.shared_prefix, ws.output_dist.c_str(), ws.max_tokens, o.qmodel_path.c_str(),
              o.qn, o.qtext.c_str());
  if (o.json) {
    nlohmann::json j;
    j["model"] = o.base.model_path;
    j["quality_model"] = o.qmodel_path;
    j["rungs"] = rungs;
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace tinfer::cli

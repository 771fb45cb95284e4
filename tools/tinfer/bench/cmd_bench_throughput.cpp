// tinfer bench throughput: drives the serving Engine with a generated workload (at most C requests in flight)
// and reports tokens/s, TTFT and per-token latency percentiles, KV use, prefix hits, preemptions and waste;
// --sweep-batch measures decode tokens/s against a fixed batch size. --json: one object on the last line.
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_load.h"
#include "bench/bench_workload.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "core/roofline.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "cli/engine_flags.h"
#include "bench/profile_report.h"
#include "model/model.h"

namespace tinfer::cli {

namespace {

// Prints "<label>: median .. P90 .. P99 .." (values times `scale`, `digits` decimals) and records the
// unscaled seconds as j["<key>_p50_s"], j["<key>_p90_s"], j["<key>_p99_s"].
void report_latency(nlohmann::json& j, const char* label, const std::string& key, const std::vector<double>& v,
                    double scale, int digits) {
  const double p50 = percentile(v, 50), p90 = percentile(v, 90), p99 = percentile(v, 99);
  std::printf("%s: median %.*f  P90 %.*f  P99 %.*f\n", label, digits, scale * p50, digits, scale * p90, digits,
              scale * p99);
  j[key + "_p50_s"] = p50;
  j[key + "_p90_s"] = p90;
  j[key + "_p99_s"] = p99;
}


// Decode tokens/s with exactly B sequences decoding together: after all B have their first token, time
// `steps` steps of B tokens each; the median step time gives B / median.
struct SweepPoint {
  int batch = 0;
  double tok_s = 0, step_ms = 0;
};

// Every request must still be decoding through the timed steps: the first ones admitted decode while
// later prompts prefill in budget-limited chunks (decode tokens take their share of each step's budget,
// so how long that lasts is not known up front). Each asks for as many tokens as the server allows and is
// aborted after the timed steps; one that still ends inside them (context full) voids the point. (With
// max_tokens = steps + 2, early requests finished inside the timed window and a 64-row point timed fewer rows.)
SweepPoint sweep_point(Engine& e, int batch, int prompt_len, int steps, int n_vocab) {
  int firsts = 0, finished = 0;
  std::vector<RequestId> ids;
  for (int b = 0; b < batch; ++b) {
    GenerationRequest g;
    for (int j = 0; j < prompt_len; ++j) g.prompt.push_back(int32_t(3 + (b * 977 + j * 131) % (n_vocab - 3)));
    g.sampling.temperature = 0;
    g.max_tokens = 1 << 30;  // clamped to --max-tokens-cap and the context
    g.ignore_eos = true;
    ids.push_back(e.add_request(std::move(g), [&](const TokenEvent& ev) {
      if (ev.has_token && ev.completion_tokens == 1) ++firsts;
      if (ev.finished) ++finished;
    }));
  }
  while (firsts < batch) e.step();
  std::vector<double> dt;
  for (int s = 0; s < steps; ++s) {
    const double a = now_s();
    e.step();
    dt.push_back(now_s() - a);
  }
  check(finished == 0, "--sweep-batch " + std::to_string(batch) + ": a request finished inside the timed steps");
  for (RequestId id : ids) e.abort(id);
  while (e.has_work()) e.step();
  const double med = percentile(dt, 50);
  return {batch, med > 0 ? batch / med : 0, med * 1e3};
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    check(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos && std::stoi(item) >= 1,
          "--sweep-batch: '" + item + "' is not a positive integer");
    v.push_back(std::stoi(item));
  }
  check(!v.empty(), "--sweep-batch: empty list");
  return v;
}

std::vector<OptionSpec> throughput_options() {
  return concat(concat(model_options(), engine_options()),
                {{"--requests", "number of requests", true, "32"},
                 {"--input-len", "synthetic prompt tokens (BOS included)", true, "128"},
                 {"--prompts", "prompt file: entries separated by lines holding only %"},
                 {"--output-len", "generated tokens per request (fixed)", true, "128"},
                 {"--output-dist", "fixed|longtail (lognormal, median 64)", true, "fixed"},
                 {"--max-tokens", "cap on drawn output lengths", true, "512"},
                 {"--concurrency", "requests in flight at most (0 = all at once)", true, "0"},
                 {"--shared-prefix", "the same N-token system prompt before every prompt", true, "0"},
                 {"--temp", "sampling temperature (0 = greedy)", true, "0"},
                 {"--beams", "every request is a beam search of width N (temperature must be 0)", true, "0"},
                 {"--seed", "workload and sampling seed", true, "1"},
                 {"--sweep-batch", "decode tok/s per batch size, e.g. 1,2,4,8,16,32,64"},
                 {"--sweep-steps", "timed decode steps per batch size", true, "16"},
                 {"--json", "print one JSON object on the last line", false},
                 {"--profile", "print time by operator category per engine step (roofline measured first)", false},
                 {"--trace", "write a Chrome trace-event JSON of every timed operation (Perfetto)"}});
}

// The engine's configuration as the report's header fields.
nlohmann::json config_json(const EngineConfig& cfg, const Engine& engine, double load_s) {
  nlohmann::json j;
  j["model"] = cfg.model_path;
  j["threads"] = cfg.threads;
  j["batching"] = batching_mode_name(cfg.batching);
  j["kv_layout"] = kv::kv_layout_name(cfg.kv.layout);
  j["kv_reuse"] = kv::reuse_order_name(cfg.kv.reuse);
  j["kv_dtype"] = engine.stats().kv_types;
  j["prefix_caching"] = cfg.kv.prefix_caching;
  j["window_kv"] = cfg.kv.window;
  j["chunked_prefill"] = cfg.scheduler.chunked_prefill;
  j["kv_blocks_total"] = engine.stats().kv_blocks_total;
  j["load_s"] = load_s;
  return j;
}

// --sweep-batch: decode tokens/s at each batch size, instead of the workload.
void run_sweep(const Args& args, const EngineConfig& cfg, Engine& engine, nlohmann::json& j) {
  const int steps = int(args.integer("--sweep-steps"));
  const int prompt_len = int(std::min<long long>(args.integer("--input-len"), 64));
  check(steps >= 1, "--sweep-steps must be >= 1");
  nlohmann::json pts = nlohmann::json::array();
  std::printf("decode sweep (%d timed steps each, prompt %d):\n  batch  step_ms   tok/s\n", steps, prompt_len);
  for (int b : parse_list(args.str("--sweep-batch"))) {
    check(b <= cfg.scheduler.max_seqs, "--sweep-batch " + std::to_string(b) + " exceeds --max-seqs");
    const SweepPoint p = sweep_point(engine, b, prompt_len, steps, int(engine.model().config().n_vocab));
    std::printf("  %5d  %7.1f  %7.1f\n", p.batch, p.step_ms, p.tok_s);
    std::fflush(stdout);
    pts.push_back({{"batch", p.batch}, {"step_ms", p.step_ms}, {"tok_s", p.tok_s}});
  }
  j["sweep"] = pts;
}

WorkloadSpec workload_spec(const Args& args, const Engine& engine) {
  WorkloadSpec ws;
  ws.requests = int(args.integer("--requests"));
  ws.input_len = int(args.integer("--input-len"));
  ws.prompts_file = args.str("--prompts");
  ws.output_len = int(args.integer("--output-len"));
  ws.output_dist = args.str("--output-dist");
  ws.max_tokens = int(args.integer("--max-tokens"));
  ws.shared_prefix = int(args.integer("--shared-prefix"));
  ws.max_model_len = engine.max_model_len();
  ws.seed = uint64_t(args.integer("--seed"));
  check(ws.shared_prefix >= 0, "--shared-prefix must be >= 0");
  return ws;
}

void report_load(const LoadResult& r, int requests, int concurrency, int beams, nlohmann::json& j) {
  const EngineStats& s = r.stats;
  const double total_tok_s = double(r.prompt_tokens + r.gen_tokens) / r.wall_s;
  const double gen_tok_s = double(r.gen_tokens) / r.wall_s;
  std::printf("requests %d (concurrency %s), prompt tokens %lld, generated %lld, wall %.2f s\n", requests,
              concurrency > 0 ? std::to_string(concurrency).c_str() : "all", (long long)r.prompt_tokens,
              (long long)r.gen_tokens, r.wall_s);
  std::printf("throughput: %.1f total tok/s, %.1f generated tok/s\n", total_tok_s, gen_tok_s);
  report_latency(j, "TTFT s", "ttft", r.ttft, 1.0, 3);
  report_latency(j, "per-token latency ms", "tpot", r.tpot, 1e3, 1);
  report_latency(j, "request latency s", "e2e", r.e2e, 1.0, 3);
  std::printf("KV: peak %d of %d blocks (%d touched), max running %d, prefix hit rate %.1f%%, preemptions %lld, "
              "waste %.1f%% of held slots (peak %lld slots), steps %lld, padding tokens computed %lld\n",
              s.kv_blocks_peak, s.kv_blocks_total, s.kv_blocks_touched, s.running_peak, 100 * s.prefix_hit_rate,
              (long long)s.preemptions, 100 * r.mean_waste, (long long)r.peak_waste_slots, (long long)s.steps,
              (long long)s.padding_tokens);
  if (beams > 0) {  // the cost of the search: positions computed beyond the prompts (all beams, recomputes too)
    const long long decode = (long long)(s.computed_tokens - r.prompt_tokens);
    std::printf("beam search width %d: %lld result tokens (%d results per request), %lld decode positions computed "
                "(%.1f/s)\n", beams, (long long)r.gen_tokens, beams, decode, double(decode) / r.wall_s);
    j["beams"] = beams;
    j["decode_computed"] = decode;
  }
  j["requests"] = requests;
  j["concurrency"] = concurrency;
  j["prompt_tokens"] = r.prompt_tokens;
  j["gen_tokens"] = r.gen_tokens;
  j["wall_s"] = r.wall_s;
  j["total_tok_s"] = total_tok_s;
  j["gen_tok_s"] = gen_tok_s;
  j["peak_kv_blocks"] = s.kv_blocks_peak;
  j["touched_kv_blocks"] = s.kv_blocks_touched;
  j["max_running"] = s.running_peak;
  j["prefix_hit_rate"] = s.prefix_hit_rate;
  j["preemptions"] = s.preemptions;
  j["kv_waste_mean"] = r.mean_waste;
  j["kv_waste_peak_slots"] = r.peak_waste_slots;
  j["steps"] = s.steps;
  j["padding_tokens"] = s.padding_tokens;
  j["spec"] = s.spec_mode;
}

void report_spec(const EngineStats& s, const OpProfile& prof, nlohmann::json& j) {
  const OpStat draft = prof[Op::kDraft];
  double forward_s = 0;
  for (int op = 0; op < static_cast<int>(Op::kSample); ++op) forward_s += prof[Op(op)].seconds;
  std::printf("speculative (%s): drafted %lld, accepted %lld (acceptance %.1f%%), %lld verify steps, "
              "%.2f tokens per decode step with drafts; time in draft %.2f s, in forward (verify) %.2f s; "
              "measured row cost %.3f\n",
              s.spec_mode.c_str(), (long long)s.spec_drafted, (long long)s.spec_accepted, 100 * s.spec_acceptance(),
              (long long)s.spec_steps, s.spec_steps > 0 ? 1.0 + double(s.spec_accepted) / double(s.spec_steps) : 0.0,
              draft.seconds, forward_s, s.spec_row_cost);
  j["spec_row_cost"] = s.spec_row_cost;
  j["spec_drafted"] = s.spec_drafted;
  j["spec_accepted"] = s.spec_accepted;
  j["spec_steps"] = s.spec_steps;
  j["spec_acceptance"] = s.spec_acceptance();
  j["spec_draft_s"] = draft.seconds;
  j["spec_forward_s"] = forward_s;
}

void report_early_exit(const EngineStats& s, nlohmann::json& j) {
  std::printf("early exit: %lld of %lld decode rows exited (%.1f%%), %.2f layers on average\n",
              (long long)s.early_exit_exited, (long long)s.early_exit_eligible,
              100.0 * double(s.early_exit_exited) / double(s.early_exit_eligible), s.early_exit_mean_layers);
  j["early_exit_rows"] = s.early_exit_eligible;
  j["early_exit_exited"] = s.early_exit_exited;
  j["early_exit_mean_layers"] = s.early_exit_mean_layers;
}

}  // namespace

int cmd_bench_throughput(int argc, char** argv) {
  Args args(argc, argv, throughput_options(),
            "tinfer bench throughput -m MODEL [--requests N] [--input-len L|--prompts FILE] [--output-len L|"
            "--output-dist fixed|longtail] [--max-tokens CAP] [--concurrency C] [--shared-prefix N] [engine flags] "
            "[--sweep-batch 1,2,4] [--profile] [--trace FILE] [--json]");
  EngineConfig cfg = engine_config(args);
  const bool json = args.flag("--json");
  cfg.verbose = true;
  double t0 = now_s();
  auto engine = Engine::create(cfg);
  nlohmann::json j = config_json(cfg, *engine, now_s() - t0);
  if (args.has("--sweep-batch")) {
    run_sweep(args, cfg, *engine, j);
    if (json) std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  const WorkloadSpec ws = workload_spec(args, *engine);
  const Workload w = make_workload(ws, engine->tokenizer(), int(engine->model().config().n_vocab));
  SamplingParams sp;
  sp.temperature = float(args.number("--temp"));
  sp.seed = ws.seed;
  const int concurrency = int(args.integer("--concurrency"));
  Roofline3 roof;
  if (args.flag("--profile")) {  // measured before the run, on as many threads as the engine uses
    ThreadPool pool(cfg.threads);
    roof = {measure_read_gbps(pool, size_t(512) << 20, 3, true), measure_int8_gops(pool, 0.2),
            measure_fp32_gflops(pool, 0.2), int8_weights(engine->model()), bf16_dot_weights(engine->model())};
  }
  OpProfile& prof = engine->stepping_profile();
  prof.reset();
  if (args.has("--trace")) prof.enable_trace(size_t(1) << 22);
  const int beams = int(args.integer("--beams"));
  const LoadResult r = run_load(*engine, w, concurrency, sp, beams);
  report_load(r, ws.requests, concurrency, beams, j);
  if (r.stats.spec_mode != "none") report_spec(r.stats, prof, j);
  if (r.stats.early_exit_eligible > 0) report_early_exit(r.stats, j);
  if (args.flag("--profile")) {
    print_profile(stdout, "engine step", prof, r.stats.steps, r.wall_s, roof);
    j["profile"] = nlohmann::json::parse(profile_json(prof, r.stats.steps, r.wall_s));
  }
  if (args.has("--trace")) write_trace(prof, args.str("--trace"));
  if (json) std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace tinfer::cli

// tinfer bench: batch-1 prefill and decode tokens/s (median and spread over repeats), measured
// side by side with the machine's read bandwidth and compute peaks in the same process, and each
// result as a percentage of its roofline. --json: one JSON object on the last stdout line.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "bench/profile_report.h"
#include "cli/common.h"
#include "cli/exit_flags.h"
#include "cli/kv_flags.h"
#include "model/model_identity.h"
#include "tinfer/error.h"
#include "core/isa.h"
#include "core/roofline.h"
#include "core/timer.h"
#include "engine/session.h"
#include "quant/type_table.h"

namespace tinfer::cli {

namespace {

struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

// Multiply-accumulates per token in the weight matrices (attention scores excluded).
double matmul_macs(const ModelConfig& c) {
  double per_layer = double(c.dim) * (c.q_dim() + 2 * c.kv_dim()) + double(c.q_dim()) * c.dim + 3.0 * c.dim * c.ffn_dim;
  return per_layer * c.n_layers + double(c.dim) * c.n_vocab;
}

// Each repeat: the prompt prefilled, then greedy decode, timed apart; the read bandwidth measured between repeats
// (interleaved: the host is bimodal). The backend's profile is split into the two phases.
struct PhaseRuns {
  std::vector<double> bw, pre, dec;  // GB/s; prefill and decode tokens/s per repeat
  OpProfile pre_prof, dec_prof;
  double pre_wall = 0, dec_wall = 0;
};

void measure_phases(Session& session, ThreadPool& pool, OpProfile& prof, const std::vector<int32_t>& prompt,
                    long long n_gen, long long repeat, PhaseRuns& out) {
  const long long n_prompt = static_cast<long long>(prompt.size());
  for (long long r = 0; r < repeat; ++r) {
    session.reset();
    prof.reset();
    double t0 = now_s();
    const std::vector<float>* logits = &session.feed(prompt);
    double t1 = now_s();
    out.pre_prof.merge(prof.counters());
    prof.reset();
    for (long long g = 1; g < n_gen; ++g) {
      int32_t next = int32_t(std::max_element(logits->begin(), logits->end()) - logits->begin());
      logits = &session.feed_token(next);
    }
    double t2 = now_s();
    out.dec_prof.merge(prof.counters());
    out.pre_wall += t1 - t0, out.dec_wall += t2 - t1;
    out.pre.push_back(n_prompt / (t1 - t0));
    out.dec.push_back((n_gen - 1) / (t2 - t1));
    out.bw.push_back(measure_read_gbps(pool, size_t(512) << 20, 3, true));  // interleaved: the host is bimodal
  }
}

// The figures the report prints: medians and spreads, and each against its roofline.
struct BenchFigures {
  Spread p, d, b;
  double fp32 = 0, int8 = 0, weight_bytes = 0, decode_bound = 0, prefill_bound = 0;
  bool quantized = false;
  bool bf16_dots = false;  // float GEMMs on bf16 dot products: their bound is 2 x fp32
};

void print_bench(const Loaded& l, const BenchFigures& f, long long n_prompt, long long n_gen, size_t n_bw,
                 const std::string& skipped) {
  std::printf("model        %s (%s), %.1f MiB of packed weights read per token, %d threads, isa %s, skip %s\n",
              l.model->path().c_str(), type_traits(l.model->tensors().layers[0].first_matrix().type).name,
              f.weight_bytes / 1048576.0, l.pool->size(), isa_name(active_isa()), skipped.c_str());
  std::printf("roofline     read %.1f GB/s (median of %zu, range %.1f-%.1f), fp32 %.0f GFLOP/s, int8 %.0f GOP/s\n",
              f.b.median, n_bw, f.b.min, f.b.max, f.fp32, f.int8);
  std::printf("prefill      %lld tokens: %.1f tok/s (range %.1f-%.1f) = %.0f%% of the %s compute bound %.0f tok/s\n",
              n_prompt, f.p.median, f.p.min, f.p.max, 100 * f.p.median / f.prefill_bound,
              f.quantized ? "int8" : f.bf16_dots ? "bf16 (2 x fp32)" : "fp32",
              f.prefill_bound);
  std::printf("decode       %lld tokens: %.1f tok/s (range %.1f-%.1f) = %.0f%% of the bandwidth bound %.1f tok/s (%.1f GB/s effective)\n",
              n_gen, f.d.median, f.d.min, f.d.max, 100 * f.d.median / f.decode_bound, f.decode_bound,
              f.d.median * f.weight_bytes / 1e9);
}

std::vector<OptionSpec> bench_options() {
  return concat(concat(concat(model_options(), kv_type_options()), early_exit_options()),
                {{"--prompt", "prompt tokens", true, "512"},
                 {"--gen", "generated tokens", true, "128"},
                 act_quant_option(),
                 {"--repeat", "repetitions (median reported)", true, "5"},
                 {"--json", "print one JSON object on the last line", false},
                 {"--profile", "print time by operator category for prefill and decode", false},
                 {"--trace", "write a Chrome trace-event JSON of every timed operation (Perfetto)"}});
}

// The serving benchmarks, `tinfer bench <name>` (nullptr: the batch-1 benchmark).
Command bench_subcommand(const std::string& name) {
  static const std::pair<const char*, Command> kSub[] = {{"throughput", cmd_bench_throughput},
                                                         {"ladder", cmd_bench_ladder},
                                                         {"serve", cmd_bench_serve},
                                                         {"spec", cmd_bench_spec},
                                                         {"grammar", cmd_bench_grammar},
                                                         {"route", cmd_bench_route}};
  for (const auto& [n, fn] : kSub)
    if (name == n) return fn;
  return nullptr;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  if (argc > 0)
    if (Command sub = bench_subcommand(argv[0])) return sub(argc - 1, argv + 1);
  Args args(argc, argv, bench_options(),
            "tinfer bench -m MODEL [--prompt 512] [--gen 128] [--repeat 5] [--kv-dtype T] [--kv-dtype-k T] [--kv-dtype-v T] [--act-quant block32|token] "
            "[--profile] "
            "[--trace FILE] [--json]   (serving: tinfer bench throughput|ladder|serve|spec|route|grammar --help)");
  const long long n_prompt = args.integer("--prompt"), n_gen = args.integer("--gen"), repeat = args.integer("--repeat");
  check(n_prompt >= 1 && n_gen >= 2 && repeat >= 1, "--prompt >= 1, --gen >= 2 and --repeat >= 1 are required");
  Loaded l = load_model(args);
  const ModelConfig& c = l.model->config();
  check(n_prompt + n_gen <= c.ctx_len,
        "--prompt + --gen exceeds the model context of " + std::to_string(c.ctx_len));
  const KvPrecision kv = kv_precision(args, *l.backend, l.model->tokenizer());
  Session session(*l.backend, n_prompt + n_gen, kv);

  std::vector<int32_t> prompt(n_prompt);
  for (long long i = 0; i < n_prompt; ++i) prompt[i] = int32_t((i * 7919 + 13) % c.n_vocab);
  PhaseRuns runs;
  runs.bw.push_back(measure_read_gbps(*l.pool, size_t(512) << 20, 5, true));
  BenchFigures f;
  f.fp32 = measure_fp32_gflops(*l.pool, 0.2), f.int8 = measure_int8_gops(*l.pool, 0.2);
  session.feed_token(prompt[0]);  // warm-up: scratch buffers, page faults
  OpProfile& prof = l.backend->profile();  // always on; split here into the two phases
  if (args.has("--trace")) prof.enable_trace(size_t(1) << 22);
  measure_phases(session, *l.pool, prof, prompt, n_gen, repeat, runs);
  f.p = spread(runs.pre), f.d = spread(runs.dec), f.b = spread(runs.bw);
  f.weight_bytes = double(l.backend->weight_bytes_read());  // a skip plan's blocks are not read
  f.decode_bound = f.b.median * 1e9 / f.weight_bytes;
  f.quantized = int8_weights(*l.model);
  f.bf16_dots = !f.quantized && bf16_dot_weights(*l.model);
  f.prefill_bound = (f.quantized ? f.int8 : f.bf16_dots ? 2 * f.fp32 : f.fp32) * 1e9 / (2 * matmul_macs(c));
  const std::string skipped = skip_plan(args, model_identity(*l.model)).describe();
  print_bench(l, f, n_prompt, n_gen, runs.bw.size(), skipped);
  const EarlyExitCounters ex = l.backend->early_exit_counters();
  const std::string exit_desc = early_exit(args).describe(c.n_layers);
  if (early_exit(args).enabled())
    std::printf("early exit   %s: %.1f%% of %lld decode steps exited, %.2f of %lld layers on average\n",
                exit_desc.c_str(), 100 * ex.share(), (long long)ex.eligible, ex.mean_layers(c.n_layers),
                (long long)c.n_layers);
  if (args.flag("--profile")) {
    const Roofline3 roof{f.b.median, f.int8, f.fp32, f.quantized, f.bf16_dots};
    print_profile(stdout, "prefill (per forward of the whole prompt)", runs.pre_prof, repeat, runs.pre_wall, roof);
    print_profile(stdout, "decode (per token)", runs.dec_prof, repeat * (n_gen - 1), runs.dec_wall, roof);
  }
  if (args.has("--trace")) write_trace(prof, args.str("--trace"));
  if (args.flag("--json"))
    std::printf(
        "{\"model\":\"%s\",\"threads\":%d,\"isa\":\"%s\",\"kv_dtype\":\"%s\",\"skip\":\"%s\",\"early_exit\":\"%s\",\"early_exit_share\":%.4f,\"act_quant\":\"%s\",\"prompt\":%lld,\"gen\":%lld,\"repeat\":%lld,"
        "\"weight_bytes\":%.0f,\"prefill_tok_s\":%.3f,\"prefill_tok_s_min\":%.3f,\"prefill_tok_s_max\":%.3f,"
        "\"decode_tok_s\":%.3f,\"decode_tok_s_min\":%.3f,\"decode_tok_s_max\":%.3f,\"read_gbps\":%.2f,"
        "\"fp32_gflops\":%.1f,\"int8_gops\":%.1f,\"decode_roofline_pct\":%.1f,\"prefill_roofline_pct\":%.1f,"
        "\"decode_effective_gbps\":%.2f,\"profile_prefill\":%s,\"profile_decode\":%s}\n",
        l.model->path().c_str(), l.pool->size(), isa_name(active_isa()), kv.describe().c_str(), skipped.c_str(), exit_desc.c_str(), ex.share(),
        act_quant_name(act_quant(args)), n_prompt, n_gen, repeat, f.weight_bytes,
        f.p.median, f.p.min, f.p.max, f.d.median, f.d.min, f.d.max, f.b.median, f.fp32, f.int8, 100 * f.d.median / f.decode_bound,
        100 * f.p.median / f.prefill_bound, f.d.median * f.weight_bytes / 1e9, profile_json(runs.pre_prof, repeat, runs.pre_wall).c_str(),
        profile_json(runs.dec_prof, repeat * (n_gen - 1), runs.dec_wall).c_str());
  return 0;
}

}  // namespace tinfer::cli

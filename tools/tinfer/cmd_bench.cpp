// tinfer bench: batch-1 prefill and decode tokens/s (median and spread over repeats), measured
// side by side with the machine's read bandwidth and compute peaks in the same process, and each
// result as a percentage of its roofline. --json: one JSON object on the last stdout line.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "profile_report.h"
#include "common.h"
#include "exit_flags.h"
#include "kv_flags.h"
#include "model/model_identity.h"
#include "core/error.h"
#include "core/isa.h"
#include "core/roofline.h"
#include "core/timer.h"
#include "engine/session.h"
#include "quant/type_table.h"

namespace tinfer::cli {

namespace {

struct Spread {
  double median, min, max;
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

}  // namespace

int cmd_bench(int argc, char** argv) {
  if (argc > 0 && std::string(argv[0]) == "throughput") return cmd_bench_throughput(argc - 1, argv + 1);
  if (argc > 0 && std::string(argv[0]) == "ladder") return cmd_bench_ladder(argc - 1, argv + 1);
  if (argc > 0 && std::string(argv[0]) == "serve") return cmd_bench_serve(argc - 1, argv + 1);
  if (argc > 0 && std::string(argv[0]) == "spec") return cmd_bench_spec(argc - 1, argv + 1);
  if (argc > 0 && std::string(argv[0]) == "route") return cmd_bench_route(argc - 1, argv + 1);
  auto spec = concat(concat(concat(model_options(), kv_type_options()), early_exit_options()),
                     {{"--prompt", "prompt tokens", true, "512"},
                                       {"--gen", "generated tokens", true, "128"},
                                       act_quant_option(),
                                       {"--repeat", "repetitions (median reported)", true, "5"},
                                       {"--json", "print one JSON object on the last line", false},
                                       {"--profile", "print time by operator category for prefill and decode", false},
                                       {"--trace", "write a Chrome trace-event JSON of every timed operation (Perfetto)"}});
  Args args(argc, argv, spec,
            "tinfer bench -m MODEL [--prompt 512] [--gen 128] [--repeat 5] [--kv-dtype T] [--kv-dtype-k T] [--kv-dtype-v T] [--act-quant block32|token] "
            "[--profile] "
            "[--trace FILE] [--json]   (serving: tinfer bench throughput|ladder|serve|spec|route --help)");
  const long long n_prompt = args.integer("--prompt"), n_gen = args.integer("--gen"), repeat = args.integer("--repeat");
  check(n_prompt >= 1 && n_gen >= 2 && repeat >= 1, "--prompt >= 1, --gen >= 2 and --repeat >= 1 are required");
  Loaded l = load_model(args);
  const ModelConfig& c = l.model->config();
  check(n_prompt + n_gen <= c.ctx_len,
        "--prompt + --gen exceeds the model context of " + std::to_string(c.ctx_len));
  const KvPrecision kv = kv_precision(args, c.n_layers);
  Session session(*l.backend, n_prompt + n_gen, kv);

  std::vector<int32_t> prompt(n_prompt);
  for (long long i = 0; i < n_prompt; ++i) prompt[i] = int32_t((i * 7919 + 13) % c.n_vocab);
  std::vector<double> bw, pre, dec;
  bw.push_back(measure_read_gbps(*l.pool, size_t(512) << 20, 5, true));
  double fp32 = measure_fp32_gflops(*l.pool, 0.2), int8 = measure_int8_gops(*l.pool, 0.2);
  session.feed_token(prompt[0]);  // warm-up: scratch buffers, page faults
  OpProfile& prof = l.backend->profile();  // always on; split here into the two phases
  if (args.has("--trace")) prof.enable_trace(size_t(1) << 22);
  OpProfile pre_prof, dec_prof;
  double pre_wall = 0, dec_wall = 0;
  for (long long r = 0; r < repeat; ++r) {
    session.reset();
    prof.reset();
    double t0 = now_s();
    const std::vector<float>* logits = &session.feed(prompt);
    double t1 = now_s();
    pre_prof.merge(prof.counters());
    prof.reset();
    for (long long g = 1; g < n_gen; ++g) {
      int32_t next = int32_t(std::max_element(logits->begin(), logits->end()) - logits->begin());
      logits = &session.feed_token(next);
    }
    double t2 = now_s();
    dec_prof.merge(prof.counters());
    pre_wall += t1 - t0, dec_wall += t2 - t1;
    pre.push_back(n_prompt / (t1 - t0));
    dec.push_back((n_gen - 1) / (t2 - t1));
    bw.push_back(measure_read_gbps(*l.pool, size_t(512) << 20, 3, true));  // interleaved: the host is bimodal
  }
  const Spread p = spread(pre), d = spread(dec), b = spread(bw);
  const double weight_bytes = double(l.backend->weight_bytes_read());  // a skip plan's blocks are not read
  const double decode_bound = b.median * 1e9 / weight_bytes;
  const bool quantized = int8_weights(*l.model);
  const double peak_ops = (quantized ? int8 : fp32) * 1e9;
  const double prefill_bound = peak_ops / (2 * matmul_macs(c));
  const std::string skipped = skip_plan(args, model_identity(*l.model)).describe();
  std::printf("model        %s (%s), %.1f MiB of packed weights read per token, %d threads, isa %s, skip %s\n",
              l.model->path().c_str(), type_traits(l.model->tensors().layers[0].first_matrix().type).name, weight_bytes / 1048576.0,
              l.pool->size(), isa_name(active_isa()), skipped.c_str());
  std::printf("roofline     read %.1f GB/s (median of %zu, range %.1f-%.1f), fp32 %.0f GFLOP/s, int8 %.0f GOP/s\n",
              b.median, bw.size(), b.min, b.max, fp32, int8);
  std::printf("prefill      %lld tokens: %.1f tok/s (range %.1f-%.1f) = %.0f%% of the %s compute bound %.0f tok/s\n",
              n_prompt, p.median, p.min, p.max, 100 * p.median / prefill_bound, quantized ? "int8" : "fp32",
              prefill_bound);
  std::printf("decode       %lld tokens: %.1f tok/s (range %.1f-%.1f) = %.0f%% of the bandwidth bound %.1f tok/s (%.1f GB/s effective)\n",
              n_gen, d.median, d.min, d.max, 100 * d.median / decode_bound, decode_bound, d.median * weight_bytes / 1e9);
  const EarlyExitCounters ex = l.backend->early_exit_counters();
  const std::string exit_desc = early_exit(args).describe(c.n_layers);
  if (early_exit(args).enabled())
    std::printf("early exit   %s: %.1f%% of %lld decode steps exited, %.2f of %lld layers on average\n",
                exit_desc.c_str(), 100 * ex.share(), (long long)ex.eligible, ex.mean_layers(c.n_layers),
                (long long)c.n_layers);
  if (args.flag("--profile")) {
    const Roofline3 roof{b.median, int8, fp32, quantized};
    print_profile(stdout, "prefill (per forward of the whole prompt)", pre_prof, repeat, pre_wall, roof);
    print_profile(stdout, "decode (per token)", dec_prof, repeat * (n_gen - 1), dec_wall, roof);
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
        act_quant_name(act_quant(args)), n_prompt, n_gen, repeat, weight_bytes,
        p.median, p.min, p.max, d.median, d.min, d.max, b.median, fp32, int8, 100 * d.median / decode_bound,
        100 * p.median / prefill_bound, d.median * weight_bytes / 1e9, profile_json(pre_prof, repeat, pre_wall).c_str(),
        profile_json(dec_prof, repeat * (n_gen - 1), dec_wall).c_str());
  return 0;
}

}  // namespace tinfer::cli

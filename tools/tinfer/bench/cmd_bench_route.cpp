// tinfer bench route: replays a (held-out) prompt mix through a routed server, automatic requests against the large
// model alone (pinned by name), interleaved prompt by prompt so both see the same machine load, greedy. Reports the
// share answered by the small model, the share escalated, the routed answers' agreement with the large model's
// (route_agreement.h), output tokens per second and latency; --repeat runs the mix again and reports medians.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "bench/bench_workload.h"
#include "cli/commands.h"
#include "tinfer/error.h"
#include "calibrate/route_agreement.h"
#include "calibrate/route_client.h"

namespace tinfer::cli {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Pass {
  double share_small = 0, share_escalated = 0, agreement = 0;
  double routed_tok_s = 0, large_tok_s = 0, routed_latency = 0, large_latency = 0;  // latency: median per request
};

// One pass over the mix: each prompt asked routed and pinned to the large model, the order alternating.
Pass one_pass(const RoutedServer& s, const std::vector<std::string>& prompts, bool chat, int n, int r) {
  Pass p;
  double routed_s = 0, large_s = 0, routed_tok = 0, large_tok = 0;
  std::vector<double> routed_lat, large_lat;
  for (size_t i = 0; i < prompts.size(); ++i) {
    // Alternate which goes first, so neither always runs right after the other's warm caches.
    RouteReply large, routed;
    if ((i + size_t(r)) % 2 == 0) {
      large = ask(s, prompts[i], chat, s.large, n);
      routed = ask(s, prompts[i], chat, "", n);
    } else {
      routed = ask(s, prompts[i], chat, "", n);
      large = ask(s, prompts[i], chat, s.large, n);
    }
    p.share_small += routed.model == s.small;
    p.share_escalated += routed.escalated;
    p.agreement += greedy_agreement(routed.tokens, large.tokens);
    routed_s += routed.seconds, large_s += large.seconds;
    routed_tok += routed.completion_tokens, large_tok += large.completion_tokens;
    routed_lat.push_back(routed.seconds), large_lat.push_back(large.seconds);
  }
  const double np = double(prompts.size());
  p.share_small /= np, p.share_escalated /= np, p.agreement /= np;
  p.routed_tok_s = routed_tok / routed_s, p.large_tok_s = large_tok / large_s;
  p.routed_latency = median(routed_lat), p.large_latency = median(large_lat);
  return p;
}

}  // namespace

int cmd_bench_route(int argc, char** argv) {
  Args args(argc, argv,
            {{"--url", "a routed tinfer server (--route entropy)", true, "http://127.0.0.1:8080"},
             {"--prompts", "prompt mix: entries separated by lines holding only %"},
             {"--chat", "send each prompt as one user message", false},
             {"-n,--max-tokens", "greedy tokens per answer", true, "32"},
             {"--repeat", "passes over the mix (figures: medians over passes)", true, "3"},
             {"--json", "print JSON", false}},
            "tinfer bench route --url URL --prompts FILE [--chat] [-n 32] [--repeat 3] [--json]");
  check(args.has("--prompts"), "missing --prompts FILE\n" + args.help());
  const int n = static_cast<int>(args.integer("--max-tokens"));
  const int repeat = static_cast<int>(args.integer("--repeat"));
  check(n >= 1 && repeat >= 1, "--max-tokens and --repeat must be >= 1");
  const std::vector<std::string> prompts = read_prompt_file(args.str("--prompts"));
  check(!prompts.empty(), "--prompts: no entries");
  const RoutedServer s = connect_routed(args.str("--url"));
  const bool chat = args.flag("--chat");

  std::vector<Pass> passes;
  for (int r = 0; r < repeat; ++r) {
    const Pass p = one_pass(s, prompts, chat, n, r);
    passes.push_back(p);
    if (!args.flag("--json"))
      std::fprintf(stderr, "pass %d: small %.3f escalated %.3f agreement %.4f  tok/s routed %.1f large %.1f\n", r,
                   p.share_small, p.share_escalated, p.agreement, p.routed_tok_s, p.large_tok_s);
  }
  auto med = [&](double Pass::*f) {
    std::vector<double> v;
    for (const Pass& p : passes) v.push_back(p.*f);
    return median(v);
  };
  const nlohmann::json out = {{"prompts", prompts.size()},
                              {"max_tokens", n},
                              {"repeat", repeat},
                              {"large", s.large},
                              {"small", s.small},
                              {"share_small", med(&Pass::share_small)},
                              {"share_escalated", med(&Pass::share_escalated)},
                              {"agreement", med(&Pass::agreement)},
                              {"routed_tok_s", med(&Pass::routed_tok_s)},
                              {"large_tok_s", med(&Pass::large_tok_s)},
                              {"routed_latency_s", med(&Pass::routed_latency)},
                              {"large_latency_s", med(&Pass::large_latency)}};
  if (args.flag("--json")) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%zu prompts x %d passes, greedy %d tokens, batch 1 (one request at a time)\n", prompts.size(), repeat,
              n);
  std::printf("answered by %s: %.1f%%   escalated: %.1f%%   agreement with %s alone: %.4f\n", s.small.c_str(),
              100 * double(out["share_small"]), 100 * double(out["share_escalated"]), s.large.c_str(),
              double(out["agreement"]));
  std::printf("output tok/s: routed %.1f, large alone %.1f (x%.2f)   median latency: routed %.3f s, large %.3f s\n",
              double(out["routed_tok_s"]), double(out["large_tok_s"]),
              double(out["routed_tok_s"]) / double(out["large_tok_s"]), double(out["routed_latency_s"]),
              double(out["large_latency_s"]));
  return 0;
}

}  // namespace tinfer::cli

// tinfer calibrate-route: picks --route-threshold for the entropy policy on a calibration prompt mix. Against a
// running routed server (any threshold), every prompt is answered greedily by each model, pinned by name; the small
// model's answer reports the prompt's entropy (tinfer_route.prompt_entropy, from its own prefill) and is scored
// against the large model's (route_agreement.h). The threshold kept is the one that routes the most prompts to the
// small model while the mix's agreement stays >= --target. Escalation is not simulated here (bench route measures it).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "bench/bench_workload.h"
#include "cli/commands.h"
#include "tinfer/error.h"
#include "calibrate/route_agreement.h"
#include "calibrate/route_client.h"

namespace tinfer::cli {

int cmd_calibrate_route(int argc, char** argv) {
  Args args(argc, argv,
            {{"--url", "a routed tinfer server (tinfer serve --model-small S --model-large L --route entropy ...)",
              true, "http://127.0.0.1:8080"},
             {"--prompts", "calibration prompts: entries separated by lines holding only %"},
             {"--chat", "send each prompt as one user message", false},
             {"-n,--max-tokens", "greedy tokens per answer", true, "32"},
             {"--target", "agreement with the large model to keep (mean over the prompts)", true, "0.95"},
             {"-o,--output", "write the choice and every prompt's numbers as JSON"},
             {"--json", "print the JSON instead of the table", false}},
            "tinfer calibrate-route --url URL --prompts FILE [--chat] [-n 32] [--target 0.95] [-o route.json]");
  check(args.has("--prompts"), "missing --prompts FILE\n" + args.help());
  const double target = args.number("--target");
  check(target > 0 && target <= 1, "--target must be in (0, 1]");
  const int n = static_cast<int>(args.integer("--max-tokens"));
  check(n >= 1, "--max-tokens must be >= 1");
  const std::vector<std::string> prompts = read_prompt_file(args.str("--prompts"));
  check(!prompts.empty(), "--prompts: no entries");
  const RoutedServer s = connect_routed(args.str("--url"));
  check(s.policy == "entropy", "the server routes '" + s.policy +
                                   "'; calibration reads prompt entropies, which only "
                                   "--route entropy reports");
  const bool chat = args.flag("--chat");

  std::vector<double> entropy, agreement;
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < prompts.size(); ++i) {
    const RouteReply large = ask(s, prompts[i], chat, s.large, n);
    const RouteReply small = ask(s, prompts[i], chat, s.small, n);
    check(small.prompt_entropy >= 0, "the server did not report the small model's prompt entropy");
    entropy.push_back(small.prompt_entropy);
    agreement.push_back(greedy_agreement(small.tokens, large.tokens));
    rows.push_back({{"prompt", i}, {"prompt_entropy", entropy.back()}, {"small_agreement", agreement.back()}});
    if (!args.flag("--json"))
      std::fprintf(stderr, "prompt %3zu  entropy %.4f  small agreement %.3f\n", i, entropy.back(), agreement.back());
  }
  const std::vector<RoutePoint> curve = route_curve(entropy, agreement);
  const RoutePoint best = choose_threshold(curve, target);
  nlohmann::json out = {{"route_threshold", best.threshold},
                        {"target", target},
                        {"share_small", best.share_small},
                        {"agreement", best.agreement},
                        {"max_tokens", n},
                        {"large", s.large},
                        {"small", s.small},
                        {"prompts", rows}};
  nlohmann::json jc = nlohmann::json::array();
  for (const RoutePoint& p : curve)
    jc.push_back({{"threshold", p.threshold}, {"share_small", p.share_small}, {"agreement", p.agreement}});
  out["curve"] = jc;
  if (args.has("--output")) {
    std::ofstream f(args.str("--output"));
    check(f.good(), "cannot write " + args.str("--output"));
    f << out.dump(2) << "\n";
  }
  if (args.flag("--json")) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("threshold  share_small  agreement\n");
  for (const RoutePoint& p : curve) std::printf("%9.4f  %11.3f  %9.3f\n", p.threshold, p.share_small, p.agreement);
  std::printf(
      "\n%zu prompts, %d greedy tokens; agreement target %.3f -> --route-threshold %.4f (%.1f%% on %s, "
      "agreement %.3f)\n",
      prompts.size(), n, target, best.threshold, 100 * best.share_small, s.small.c_str(), best.agreement);
  return 0;
}

}  // namespace tinfer::cli

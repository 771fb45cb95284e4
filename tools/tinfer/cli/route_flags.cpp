// route_flags: parse and check the routing options (see route_flags.h).
#include "cli/route_flags.h"

#include "tinfer/error.h"

namespace tinfer::cli {

std::vector<OptionSpec> route_options() {
  return {{"--model-small", "routing: the small model (same tokenizer as the large one)", true, "", false, true},
          {"--model-large", "routing: the large model (the default one; replaces -m)", true, "", false, true},
          {"--route",
           "routing policy: explicit (the request's model field) | entropy (automatic, by the small "
           "model's prompt entropy)"},
          {"--route-threshold",
           "entropy policy: prompts whose mean next-token entropy (nats) on the small model is "
           "above this go to the large model (tinfer calibrate-route picks it)"},
          {"--escalate-threshold",
           "entropy policy: escalate to the large model when the small one's last "
           "--escalate-window tokens average more entropy than this (0 = never)"},
          {"--escalate-window", "tokens in the escalation window", true, "4"}};
}

std::optional<RouteSetup> route_setup(const Args& args) {
  const bool any = args.has("--model-small") || args.has("--model-large") || args.has("--route") ||
                   args.has("--route-threshold") || args.has("--escalate-threshold");
  if (!any) return std::nullopt;
  check(args.has("--model-small") && args.has("--model-large") && args.has("--route"),
        "routing needs --model-small FILE, --model-large FILE and --route explicit|entropy together");
  check(!args.has("--model"), "-m/--model and --model-large name the same thing; with routing give --model-large only");
  RouteSetup r;
  r.small_path = args.str("--model-small");
  r.large_path = args.str("--model-large");
  r.config.mode = server::parse_route_mode(args.str("--route"));
  if (args.has("--route-threshold")) r.config.route_threshold = args.number("--route-threshold");
  if (args.has("--escalate-threshold")) r.config.escalate_threshold = args.number("--escalate-threshold");
  r.config.escalate_window = static_cast<int>(args.integer("--escalate-window"));
  check(r.config.mode != server::RouteMode::kEntropy || args.has("--route-threshold"),
        "--route entropy needs --route-threshold (tinfer calibrate-route measures one)");
  if (auto errs = r.config.validate(); !errs.empty()) fail(errs.front());
  return r;
}

}  // namespace tinfer::cli

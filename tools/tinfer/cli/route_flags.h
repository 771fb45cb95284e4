// The routing flags of tinfer serve (--model-small, --model-large, --route, thresholds), checked once at the edge.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cli/args.h"
#include "server/route_policy.h"

namespace tinfer::cli {

std::vector<OptionSpec> route_options();

struct RouteSetup {
  std::string small_path, large_path;
  server::RouteConfig config;
};

// nullopt when no routing flag is given. Error naming the problem for: one model without the other, -m together
// with them, a threshold without --route entropy, an unknown policy, a negative threshold.
std::optional<RouteSetup> route_setup(const Args& args);

}  // namespace tinfer::cli

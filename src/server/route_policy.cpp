// RoutePolicy and EscalationMonitor: the routing decisions (see route_policy.h).
#include "server/route_policy.h"

#include <cmath>

#include "tinfer/error.h"
#include "server/api_error.h"

namespace tinfer::server {

RouteMode parse_route_mode(const std::string& name) {
  if (name == "explicit") return RouteMode::kExplicit;
  if (name == "entropy") return RouteMode::kEntropy;
  fail("--route: unknown policy '" + name + "' (choices: explicit, entropy)");
}

const char* route_mode_name(RouteMode m) { return m == RouteMode::kExplicit ? "explicit" : "entropy"; }

std::vector<std::string> RouteConfig::validate() const {
  std::vector<std::string> p;
  if (!std::isfinite(route_threshold) || route_threshold < 0) p.push_back("--route-threshold must be a number >= 0");
  if (!std::isfinite(escalate_threshold) || escalate_threshold < 0)
    p.push_back("--escalate-threshold must be a number >= 0 (0: never escalate)");
  if (escalate_window < 1 || escalate_window > 256) p.push_back("--escalate-window must be in [1, 256]");
  if (mode == RouteMode::kExplicit && (route_threshold > 0 || escalate_threshold > 0))
    p.push_back("--route-threshold and --escalate-threshold need --route entropy");
  return p;
}

RoutePolicy::RoutePolicy(RouteConfig config, std::vector<std::string> ids)
    : config_(std::move(config)), ids_(std::move(ids)) {
  check(ids_.size() == 2, "routing needs exactly two models (large, small)");
  check(ids_[kLargeModel] != ids_[kSmallModel],
        "the two models have the same name '" + ids_[0] + "'; rename a file (the id is the file name)");
  check(ids_[0] != "auto" && ids_[1] != "auto", "'auto' is the automatic route's name, not a model's");
  auto errs = config_.validate();
  check(errs.empty(), errs.empty() ? "" : errs.front());
}

RoutePolicy::Start RoutePolicy::start(const std::string& requested) const {
  const bool automatic_name = requested.empty() || (requested == "auto" && config_.mode == RouteMode::kEntropy);
  if (automatic_name) return config_.mode == RouteMode::kEntropy ? Start{kSmallModel, true} : Start{kLargeModel, false};
  for (int i = 0; i < static_cast<int>(ids_.size()); ++i)
    if (requested == ids_[size_t(i)]) return {i, false};
  throw ApiError(404,
                 "The model '" + requested + "' does not exist; this server serves '" + ids_[kLargeModel] + "' and '" +
                     ids_[kSmallModel] + "'" + (config_.mode == RouteMode::kEntropy ? " (or 'auto')" : ""),
                 "model", "model_not_found");
}

bool RoutePolicy::prefers_large(float prompt_entropy) const {
  // NaN (not measured) is never below the threshold: an unmeasured prompt goes to the large model.
  return !(double(prompt_entropy) <= config_.route_threshold);
}

bool EscalationMonitor::observe(float entropy) {
  last_.push_back(entropy);
  if (static_cast<int>(last_.size()) > window_) last_.pop_front();
  return static_cast<int>(last_.size()) == window_ && !(window_mean() <= threshold_);
}

double EscalationMonitor::window_mean() const {
  if (last_.empty()) return 0;
  double s = 0;
  for (float h : last_) s += h;
  return s / double(last_.size());
}

}  // namespace tinfer::server

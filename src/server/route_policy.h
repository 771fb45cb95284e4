// Routing between models (tinfer serve --model-small S --model-large L --route POLICY): which model answers a
// request, decided here and nowhere else. The server's completion path asks this object three questions: where a
// request starts, whether a measured prompt goes to the large model, and whether a run of uncertain tokens on the
// small model escalates to the large one. Plain decisions on plain numbers, so tests can pin them down.
#pragma once
#include <deque>
#include <string>
#include <vector>

namespace tinfer::server {

enum class RouteMode {
  kExplicit,  // the request's `model` field picks the model (absent: the large one)
  kEntropy,   // automatic: the small model's mean next-token entropy over the prompt against a threshold
};

// "explicit" / "entropy"; throws tinfer::Error naming the choices for anything else.
RouteMode parse_route_mode(const std::string& name);
const char* route_mode_name(RouteMode m);

struct RouteConfig {
  RouteMode mode = RouteMode::kExplicit;
  // kEntropy: prompts whose mean next-token entropy (nats) on the small model exceeds this go to the large model.
  double route_threshold = 0;
  // kEntropy: while the small model generates, the mean entropy of its last escalate_window tokens above this
  // hands the request to the large model (prompt + the tokens so far). <= 0: never escalate.
  double escalate_threshold = 0;
  int escalate_window = 4;

  std::vector<std::string> validate() const;  // every problem, one message each
};

// Index 0 is the large model, 1 the small one (ServerContext::models, EngineDriver's engines).
inline constexpr int kLargeModel = 0;
inline constexpr int kSmallModel = 1;

class RoutePolicy {
 public:
  // ids[kLargeModel], ids[kSmallModel]: the names clients see.
  RoutePolicy(RouteConfig config, std::vector<std::string> ids);

  struct Start {
    int model = kLargeModel;
    bool automatic = false;  // kEntropy and the request named no model: measured on the small one first
  };
  // Where a request naming `requested` ("" = none) starts. An unknown name is ApiError 404 model_not_found.
  // Under kEntropy, "" and "auto" are automatic; a model's own id pins it (no measurement, no escalation).
  Start start(const std::string& requested) const;
  // An automatic request's measured prompt: true = the large model answers.
  bool prefers_large(float prompt_entropy) const;
  bool escalates() const { return config_.mode == RouteMode::kEntropy && config_.escalate_threshold > 0; }

  const RouteConfig& config() const { return config_; }
  const std::vector<std::string>& ids() const { return ids_; }

 private:
  RouteConfig config_;
  std::vector<std::string> ids_;
};

// The escalation rule: the mean of the last `window` token entropies above `threshold` (a full window only, so one
// uncertain token alone never escalates).
class EscalationMonitor {
 public:
  EscalationMonitor(double threshold, int window) : threshold_(threshold), window_(window) {}
  // Adds one token's entropy; true when the window now crosses the threshold.
  bool observe(float entropy);
  double window_mean() const;

 private:
  double threshold_;
  int window_;
  std::deque<float> last_;
};

}  // namespace tinfer::server

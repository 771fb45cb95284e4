// RoutedRequest: a prompt's attempts on the routed models (see routed_request.h).
#include "server/routed_request.h"

#include <cstdio>

#include "server/api_error.h"

namespace tinfer::server {

nlohmann::json route_json(const RouteOutcome& o, const std::string& model_id) {
  nlohmann::json j = {
      {"policy", o.policy},
      {"automatic", o.automatic},
      {"prompt_entropy", std::isnan(o.prompt_entropy) ? nlohmann::json(nullptr) : nlohmann::json(o.prompt_entropy)},
      {"model", model_id},
      {"escalated", o.escalated}};
  if (o.escalated) j["escalated_after"] = o.escalated_after;
  return j;
}

RoutedRequest::RoutedRequest(ServerContext& ctx, const std::string& requested_model, GenerationRequest base)
    : ctx_(ctx), base_(std::move(base)) {
  if (!ctx_.route) {
    if (!requested_model.empty() && requested_model != ctx_.model_id)
      throw ApiError(404,
                     "The model '" + requested_model + "' does not exist; this server serves '" + ctx_.model_id + "'",
                     "model", "model_not_found");
    resolved_.emplace(ctx_.driver.engine(kLargeModel).resolve(base_));
    max_tokens_ = resolved_->max_tokens;
    return;
  }
  const RoutePolicy& policy = *ctx_.route;
  const RoutePolicy::Start start = policy.start(requested_model);
  outcome_.policy = route_mode_name(policy.config().mode);
  outcome_.model = start.model;
  outcome_.automatic = start.automatic && !base_.use_beam_search;  // a search is not measured: the large model
  if (start.automatic && base_.use_beam_search) outcome_.model = kLargeModel;
  measuring_ = outcome_.automatic;
  if (outcome_.automatic && policy.escalates() && base_.n == 1)
    monitor_.emplace(policy.config().escalate_threshold, policy.config().escalate_window);
  GenerationRequest g = base_;
  // Every request the small model answers under the entropy policy reports its entropies, pinned ones too: the
  // calibration (tinfer calibrate-route) reads them from pinned requests.
  g.report_entropy = policy.config().mode == RouteMode::kEntropy && outcome_.model == kSmallModel && !g.use_beam_search;
  resolved_.emplace(ctx_.driver.engine(outcome_.model).resolve(std::move(g)));
  max_tokens_ = resolved_->max_tokens;
}

const std::string& RoutedRequest::model_id() const {
  return ctx_.route ? ctx_.route->ids()[size_t(outcome_.model)] : ctx_.model_id;
}

void RoutedRequest::submit(Sink sink) {
  sink_ = std::move(sink);
  id_ = ctx_.driver.submit(outcome_.model, std::move(*resolved_),
                           [sink = sink_, a = attempt_](const TokenEvent& e) { sink(e, a); });
  resolved_.reset();
  submitted_ = true;
}

void RoutedRequest::cancel() {
  if (submitted_) ctx_.driver.cancel(outcome_.model, id_);
}

bool RoutedRequest::move_to_large(std::vector<Token> prompt, int max_tokens) {
  GenerationRequest g = base_;
  g.prompt = std::move(prompt);
  g.max_tokens = max_tokens;
  g.report_entropy = false;
  std::optional<ResolvedRequest> r;
  try {
    r.emplace(ctx_.driver.engine(kLargeModel).resolve(std::move(g)));
  } catch (const RequestError&) {
    return false;  // the small model keeps the request
  }
  ctx_.driver.cancel(outcome_.model, id_);
  ++attempt_;
  outcome_.model = kLargeModel;
  id_ =
      ctx_.driver.submit(kLargeModel, std::move(*r), [sink = sink_, a = attempt_](const TokenEvent& e) { sink(e, a); });
  return true;
}

bool RoutedRequest::filter(const TokenEvent& ev, int attempt) {
  if (attempt != attempt_) return false;  // an abandoned attempt (its abort event, tokens already in flight)
  if (!ev.has_token) return true;
  // The small model's prefill is done: its first token carries the prompt's entropy (pinned requests report it
  // too, for calibration).
  if (std::isnan(outcome_.prompt_entropy) && outcome_.model == kSmallModel) outcome_.prompt_entropy = ev.prompt_entropy;
  if (measuring_) {
    measuring_ = false;
    if (ctx_.route->prefers_large(ev.prompt_entropy) && move_to_large(base_.prompt, base_.max_tokens)) return false;
  }
  if (monitor_ && outcome_.model == kSmallModel && monitor_->observe(ev.entropy)) {
    // This token came from an unsure distribution: the large model continues after the tokens before it.
    std::vector<Token> prompt = base_.prompt;
    prompt.insert(prompt.end(), delivered_.begin(), delivered_.end());
    const double mean = monitor_->window_mean();
    if (move_to_large(std::move(prompt), max_tokens_ - static_cast<int>(delivered_.size()))) {
      outcome_.escalated = true;
      outcome_.escalated_after = static_cast<int>(delivered_.size());
      outcome_.escalation_window_mean = static_cast<float>(mean);
      return false;
    }
  }
  if (monitor_) delivered_.push_back(ev.token);
  return true;
}

void RoutedRequest::report(const std::string& request_id, int prompt_index) {
  if (!ctx_.route || !submitted_ || reported_) return;
  reported_ = true;
  Metrics& m = ctx_.metrics;
  m.route_answered[size_t(outcome_.model)]++;
  if (outcome_.automatic) m.route_automatic++;
  if (outcome_.escalated) m.route_escalations++;
  char ent[32] = "-";
  if (!std::isnan(outcome_.prompt_entropy)) std::snprintf(ent, sizeof ent, "%.4f", double(outcome_.prompt_entropy));
  char line[512];
  int len =
      std::snprintf(line, sizeof line,
                    "tinfer route: request=%s prompt=%d policy=%s automatic=%s prompt_entropy=%s threshold=%.4f "
                    "model=%s escalated=%s",
                    request_id.c_str(), prompt_index, outcome_.policy.c_str(), outcome_.automatic ? "yes" : "no", ent,
                    ctx_.route->config().route_threshold, model_id().c_str(), outcome_.escalated ? "yes" : "no");
  if (outcome_.escalated && len > 0 && len < int(sizeof line))
    std::snprintf(line + len, sizeof line - size_t(len), " escalated_after=%d window_entropy=%.4f",
                  outcome_.escalated_after, double(outcome_.escalation_window_mean));
  std::fprintf(stderr, "%s\n", line);  // one write: lines of concurrent requests do not interleave
}

}  // namespace tinfer::server

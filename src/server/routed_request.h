// One prompt's engine request under routing between models: it starts on the model the RoutePolicy names; an
// automatic one is measured on the small model, and may move to the large one twice over: when its prompt's
// entropy is above the threshold (the small model's first token is dropped, the large model starts afresh), or
// when the small model grows unsure while generating (escalation: the large model continues from the prompt plus
// the tokens the client already has, so the client sees one answer). Each move is a new engine request, an
// "attempt"; events of earlier attempts are dropped, so the client only ever sees the current one.
// Without a policy it is a plain request on the one model. Thread use: submit() and filter() on the request's
// HTTP thread; the event sink runs on the engine thread.
#pragma once
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/route_policy.h"
#include "server/server_context.h"

namespace tinfer::server {

// What the client and the log learn about a prompt's route.
struct RouteOutcome {
  std::string policy;  // "explicit", "entropy" or "" (no routing)
  bool automatic = false;
  float prompt_entropy = NAN;  // the small model's mean next-token entropy over the prompt (nats), if measured
  int model = kLargeModel;     // who answers now (after any move)
  bool escalated = false;
  int escalated_after = -1;  // tokens the small model had produced when the large one took over
  float escalation_window_mean = NAN;
};

// {"policy", "automatic", "prompt_entropy" (null if not measured), "model", "escalated", "escalated_after"}.
nlohmann::json route_json(const RouteOutcome& o, const std::string& model_id);

class RoutedRequest {
 public:
  // sink(event, attempt): called on the engine thread; it must only queue the pair for filter().
  using Sink = std::function<void(const TokenEvent&, int attempt)>;

  // Resolves `base` (with the prompt's `model` name) for its starting model; throws RequestError / ApiError.
  RoutedRequest(ServerContext& ctx, const std::string& requested_model, GenerationRequest base);
  const ResolvedRequest& resolved() const { return *resolved_; }  // until submit()

  void submit(Sink sink);
  // The HTTP thread's view of one queued event: true = deliver it to the client. May cancel this attempt and
  // submit the next one (on the large model) instead.
  bool filter(const TokenEvent& ev, int attempt);
  void cancel();  // the current attempt (any time after submit)
  bool submitted() const { return submitted_; }

  const RouteOutcome& outcome() const { return outcome_; }
  const std::string& model_id() const;  // the answering model's id
  // Once, when the request ends (however it ends): one stderr line (request id, policy, prompt entropy, model,
  // escalated) and the routing counters of /metrics. Nothing without routing.
  void report(const std::string& request_id, int prompt_index);

 private:
  // Cancels the current attempt and continues on the large model; false (nothing changed) when the large model
  // cannot take the request (e.g. its context is shorter).
  bool move_to_large(std::vector<Token> prompt, int max_tokens);

  ServerContext& ctx_;
  GenerationRequest base_;
  std::optional<ResolvedRequest> resolved_;
  Sink sink_;
  bool submitted_ = false;
  int attempt_ = 0;
  RequestId id_ = 0;
  int max_tokens_ = 0;      // the first attempt's resolved output limit
  bool measuring_ = false;  // automatic, on the small model, no token seen yet
  std::optional<EscalationMonitor> monitor_;
  std::vector<Token> delivered_;  // tokens the client has (escalation, n == 1 only, continues after them)
  bool reported_ = false;
  RouteOutcome outcome_;
};

}  // namespace tinfer::server

// The client side of routing measurements (tinfer calibrate-route, tinfer bench route): one non-streamed greedy
// request to a routed tinfer server, pinned to a model or automatic, and what the answer and its tinfer_route say.
#pragma once
#include <string>
#include <vector>

#include "bench/http_client.h"

namespace tinfer::cli {

struct RoutedServer {
  HttpUrl url;
  std::string large, small;  // model ids, from /v1/models (tinfer_route.role)
  std::string policy;
};

// Reads /v1/models; Error when the server does not route between two models.
RoutedServer connect_routed(const std::string& url);

struct RouteReply {
  std::string text, model;
  std::vector<int> tokens;  // the answer re-encoded by the server's /tokenize (no specials added)
  bool automatic = false, escalated = false;
  double prompt_entropy = -1;  // -1: not measured
  int completion_tokens = 0;
  double seconds = 0;  // request sent -> whole body read
};

// model "" = automatic. chat: the prompt is one user message. Greedy, at most max_tokens. Error on any failure.
RouteReply ask(const RoutedServer& s, const std::string& prompt, bool chat, const std::string& model, int max_tokens);

}  // namespace tinfer::cli

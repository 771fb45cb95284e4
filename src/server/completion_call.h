// One /v1/completions or /v1/chat/completions request from body to response: validation and
// submission happen in start() (so errors are known before any byte is written); run() then streams
// SSE chunks or the final JSON through `write`, and aborts the engine request when the client is gone.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/server_context.h"

namespace tinfer::server {

using WriteFn = std::function<bool(std::string_view)>;  // false: the client is gone
using PeerGoneFn = std::function<bool()>;                // true: the client is gone (asked without writing)

class CompletionCall {
 public:
  // Parses, validates, tokenizes, takes a queue slot and submits. Throws ApiError.
  // raw_body: the body's text (schemas and tools keep their key order).
  static std::unique_ptr<CompletionCall> start(ServerContext& ctx, const nlohmann::json& body, bool chat,
                                               std::string_view raw_body = {});
  ~CompletionCall();

  bool streaming() const;
  const std::vector<std::string>& warnings() const;
  // Produces the whole response body through `write`, asking `peer_gone` every probe period while it waits
  // (nothing but the response's own bytes goes out; streams begin with "data: {"). Returns when done or when
  // the client is gone (the request is then aborted in the engine).
  void run(const WriteFn& write, const PeerGoneFn& peer_gone);

  struct State;

 private:
  explicit CompletionCall(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace tinfer::server

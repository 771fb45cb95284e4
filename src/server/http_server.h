// The HTTP front end: binds and answers /health (503) at once, becomes ready once an engine is
// attached and a warm-up generation has run, and shuts down gracefully. Serves through HttpListener (http_conn.h).
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "text/chat/chat_template.h"
#include "server/http_message.h"
#include "server/route_policy.h"
#include "server/server_config.h"
#include "tinfer/engine.h"

namespace tinfer::server {

class HttpServer {
 public:
  explicit HttpServer(ServerConfig config);  // Error listing every invalid setting
  ~HttpServer();                             // shutdown() if still running

  // Binds host:port (port 0 = any) and starts serving on a background thread; returns the port.
  int start();
  // Starts the engine thread, runs a one-token warm-up generation and marks the server ready.
  // The engine, tokenizer and template must outlive the server. Throws Error if the warm-up fails.
  void attach(Engine& engine, const Tokenizer& tokenizer, ChatTemplate chat_template, std::string model_id);
  // Routing between two models (route_policy.h): one engine thread steps both; the large model's tokenizer and
  // template serve both (the caller checks the two vocabularies are equal). Each model gets its own warm-up.
  void attach_routed(Engine& large, Engine& small, const RoutePolicy& policy, ChatTemplate chat_template);
  bool ready() const;
  // Stops accepting, lets in-flight requests finish for shutdown_grace_s, aborts the rest (each gets
  // a proper final response), then stops the engine thread. Idempotent.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// True when a and b are equal; the time taken does not depend on where they differ.
bool constant_time_equal(const std::string& a, const std::string& b);
// Why `req` does not carry `key` as 'Authorization: Bearer <key>' (scheme in any case, one Authorization header
// only), or null when it does. The key is compared in constant time.
const char* api_key_refusal(const HttpRequest& req, const std::string& key);
// "%2F" -> "/"; anything that is not a %XX escape, and escapes of control bytes (%00-%1F, %7F), are kept as sent.
std::string percent_decode(std::string_view s);

}  // namespace tinfer::server

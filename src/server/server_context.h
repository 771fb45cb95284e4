// Everything a request handler needs, shared by all HTTP threads: the engine driver, tokenizer,
// limits, metrics, and the server-side admission counter behind --max-queued-requests.
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "text/chat/chat_template.h"
#include "grammar/grammar_compiler.h"
#include "server/engine_driver.h"
#include "server/memory_trim.h"
#include "server/preprocess_pool.h"
#include "server/prompt_floor.h"
#include "text/tool_calls/tool_call_format.h"
#include "server/metrics.h"
#include "server/response_id.h"
#include "server/route_policy.h"
#include "server/server_config.h"

namespace tinfer::server {

struct ServerContext {
  const ServerConfig& config;
  EngineDriver& driver;
  const Tokenizer& tokenizer;
  ChatTemplate chat_template;  // parsed when the server started
  std::string model_id;
  int max_model_len = 0;
  Metrics& metrics;
  // Routing between models (tinfer serve --route): null with one model. Then driver.engine(kLargeModel) and
  // driver.engine(kSmallModel) are the two models, model_id the large one's.
  const RoutePolicy* route = nullptr;

  // Requests accepted but not yet producing tokens (their first event has not arrived).
  std::atomic<int> queued{0};
  // Shutdown: once set, in-flight requests end at abort_deadline with finish_reason "abort".
  std::atomic<bool> draining{false};
  std::atomic<int64_t> abort_deadline_ns{INT64_MAX};
  // Structured output: compiles each request's grammar (on its HTTP thread, off the engine's step loop), cached.
  std::unique_ptr<grammar::GrammarCompiler> grammars;
  // Tool calls and reasoning, from the template (or --tool-call-parser): the format row that parses calls out of
  // answers and builds the grammar that forces them; whether the model reasons in <think> blocks, and whether its
  // prompt already opens one.
  const toolcall::ToolCallFormat* tool_format = nullptr;
  bool reasoning = false, opens_reasoning = false;
  // Ids of responses (chatcmpl-..., cmpl-...), drawn from a random source.
  ResponseIds response_ids;
  // Preprocessing bounds (prepare_preprocessing): the prompt floor and the longest context of any engine it is held
  // to, the threads that parse/template/tokenize, and the trimmer each of their jobs reports its body bytes to.
  PromptFloor floor;
  int floor_max_len = 0;
  std::unique_ptr<MemoryTrimmer> trimmer;
  std::unique_ptr<PreprocessPool> preprocess;

  bool past_abort_deadline() const {
    return std::chrono::steady_clock::now().time_since_epoch().count() >= abort_deadline_ns.load();
  }
};

// Measures the prompt floor and builds the trimmer and the pool, from ctx's config, engines and template.
void prepare_preprocessing(ServerContext& ctx);
// Runs a request's preprocessing (fn: parse, render, tokenize) on ctx's pool, rethrowing what fn threw; throws
// ApiError 429 (queue_full, Retry-After) when no pool thread took it within the wait. Inline when ctx has no pool
// (tests that build a context by hand).
void preprocess(ServerContext& ctx, size_t body_bytes, const std::function<void()>& fn);

// Holds one unit of ctx.queued from acceptance until the first token (or the end of the request).
class QueueSlot {
 public:
  // Throws ApiError 429 when the queue is full.
  explicit QueueSlot(ServerContext& ctx);
  // Throws the same 429 when the queue is full now, without taking a slot: lets the HTTP layer
  // refuse before it reads or parses a body.
  static void refuse_if_full(ServerContext& ctx);
  ~QueueSlot() { release(); }
  void release();

 private:
  ServerContext& ctx_;
  bool held_ = true;
};

}  // namespace tinfer::server

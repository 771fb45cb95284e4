// tinfer serve: the OpenAI-compatible HTTP server. Binds first (GET /health answers 503 while the
// model loads), then loads the engine, warms it up and serves until SIGTERM/SIGINT (graceful, exit 0).
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "text/tool_calls/tool_call_format.h"
#include "cli/chat_flags.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "tinfer/error.h"
#include "cli/engine_flags.h"
#include "model/model.h"
#include "text/tokenizer/same_tokenizer.h"
#include "cli/route_flags.h"
#include "server/http_server.h"

namespace tinfer::cli {

namespace {

// -c as serve reads it: without it the engine takes the model's whole context (tinfer run caps it at 4096).
std::vector<OptionSpec> serve_model_options() {
  std::vector<OptionSpec> o = model_options();
  for (OptionSpec& s : o)
    if (s.names == "-c,--ctx") s.help = "context length, max_model_len (default: the model's trained context)";
  return o;
}

std::vector<OptionSpec> serve_options() {
  return concat(concat(concat(serve_model_options(), engine_options()), route_options()),
                {{"--host", "address to bind (default: loopback only)", true, "127.0.0.1"},
                 {"--port", "TCP port (0 = any free port; the chosen one is printed)", true, "8080"},
                 {"--api-key",
                  "require 'Authorization: Bearer KEY' on API routes; prefer env TINFER_API_KEY (a flag is visible in ps)",
                  true, ""},
                 {"--served-model-name", "model id clients use (default: the model file's name)", true, ""},
                 {"--max-queued-requests", "requests waiting for their first token; beyond: 429", true, "256"},
                 {"--max-preprocessing",
                  "threads that parse, template and tokenize requests (0 = one per core); the rest wait", true, "0"},
                 {"--preprocess-wait", "seconds a request may wait for preprocessing; beyond: 429", true, "10"},
                 {"--max-body-bytes", "largest request body in bytes (K/M suffixes: 512K, 16M); beyond: 413", true,
                  "1048576"},
                 {"--long-request-tokens", "max_tokens above this: the background class (0 = none)", true, "1024"},
                 {"--max-long-in-flight", "background-class requests running at once", true, "2"},
                 {"--http-threads", "HTTP worker threads: requests handled at once (a stream holds one until it ends)",
                  true, "512"},
                 {"--shutdown-grace", "seconds in-flight requests get on SIGTERM before abort", true, "5"},
                 {"--max-connections", "open connections; beyond: ones without a whole request head are closed first",
                  true, "1024"},
                 {"--header-timeout", "seconds a request's whole head may take to arrive; beyond: 408", true, "10"},
                 {"--body-timeout", "seconds a request's whole body may take after its head; beyond: 408", true, "30"},
                 {"--send-timeout", "seconds a client may take less than 1 KiB of the response before it is dropped", true, "2"},
                 {"--sse-keepalive",
                  "streams: an SSE comment after this many seconds without a write, never before the first data "
                  "event (0 = off; else 15-86400)",
                  true, "0"},
                 {"--max-response-entries",
                  "non-streamed responses: most choices x max_tokens x (1 + top_logprobs); beyond: 400", true, "262144"},
                 {"--max-stream-backlog",
                  "a stream's bytes its client has not taken yet (K/M suffixes); beyond: the stream is cut", true, "16M"},
                 {"--grammar-cache-mb", "structured output: compiled grammars kept for reuse (MiB)", true, "512"},
                 {"--tool-call-parser",
                  "tool-call format: hermes, llama3_json, mistral, pythonic, qwen3_coder (default: from the template)",
                  true, ""},
                 chat_template_option()});
}

// The engine flags read -m; with routing the large model is the engine the flags describe.
EngineConfig serve_engine_config(int argc, char** argv, const Args& args, const std::optional<RouteSetup>& route,
                                 const std::vector<OptionSpec>& spec, const std::string& usage) {
  std::vector<std::string> words(argv, argv + argc);
  if (route) words.insert(words.end(), {"-m", route->large_path});
  std::vector<char*> wargv;
  for (std::string& w : words) wargv.push_back(w.data());
  const Args eargs(static_cast<int>(wargv.size()), wargv.data(), spec, usage);
  EngineConfig ec = engine_config(eargs);
  ec.requests.long_request_tokens = static_cast<int>(args.integer("--long-request-tokens"));
  ec.scheduler.max_background_running = static_cast<int>(args.integer("--max-long-in-flight"));
  if (auto errs = ec.validate(); !errs.empty()) fail("invalid engine options:\n  " + errs.front());
  return ec;
}

server::ServerConfig server_config(const Args& args) {
  server::ServerConfig sc;
  sc.host = args.str("--host");
  sc.port = static_cast<int>(args.integer("--port"));
  sc.api_key = args.str("--api-key");
  if (!sc.api_key.empty())
    std::fprintf(stderr,
                 "tinfer serve: warning: --api-key is visible to every local user (ps, /proc); "
                 "pass the key in the TINFER_API_KEY environment variable instead\n");
  else if (const char* k = std::getenv("TINFER_API_KEY"); k)
    sc.api_key = k;
  sc.served_model_name = args.str("--served-model-name");
  sc.max_queued_requests = static_cast<int>(args.integer("--max-queued-requests"));
  sc.max_preprocessing = static_cast<int>(args.integer("--max-preprocessing"));
  sc.preprocess_wait_s = args.number("--preprocess-wait");
  sc.max_body_bytes = parse_bytes(args.str("--max-body-bytes"), "--max-body-bytes");
  sc.http_threads = static_cast<int>(args.integer("--http-threads"));
  sc.shutdown_grace_s = args.number("--shutdown-grace");
  sc.max_response_entries = args.integer("--max-response-entries");
  sc.max_stream_backlog_bytes = parse_bytes(args.str("--max-stream-backlog"), "--max-stream-backlog");
  sc.max_streams_backlog_bytes = std::max(sc.max_streams_backlog_bytes, sc.max_stream_backlog_bytes);
  sc.max_connections = static_cast<int>(args.integer("--max-connections"));
  sc.header_timeout_s = args.number("--header-timeout");
  sc.body_timeout_s = args.number("--body-timeout");
  sc.send_stall_s = args.number("--send-timeout");
  sc.sse_keepalive_s = args.number("--sse-keepalive");
  sc.grammar_cache_bytes = args.integer("--grammar-cache-mb") << 20;
  sc.tool_call_parser = args.str("--tool-call-parser");
  check(sc.tool_call_parser.empty() || toolcall::find_tool_call_format(sc.tool_call_parser),
        "--tool-call-parser: unknown format '" + sc.tool_call_parser + "' (hermes, llama3_json, mistral, pythonic, qwen3_coder)");
  return sc;
}

// The routed pair: the small model's engine (the large one's settings without its plans and speculation), the
// policy, attached to the server.
struct Routed {
  std::unique_ptr<Engine> small;
  std::unique_ptr<server::RoutePolicy> policy;
};

Routed attach_routed(server::HttpServer& server, Engine& engine, const EngineConfig& ec, const RouteSetup& route,
                     ChatTemplate tmpl, const std::string& model_id) {
  // Same engine settings for the small model, without speculation (a draft of the small model makes no sense);
  // both engines' pools are stepped by one thread, one engine at a time (server/engine_driver.h).
  EngineConfig sc_engine = ec;
  sc_engine.model_path = route.small_path;
  sc_engine.spec = SpecConfig{};
  // The model-specific plans were made for (and checked against) the large model: the small one runs without
  // them (a layer-skip, KV or early-exit plan for it would need its own flags).
  sc_engine.plans = {};
  Routed r;
  r.small = Engine::create(sc_engine);
  check_same_tokenizer(engine.tokenizer(), r.small->tokenizer(), "small model " + route.small_path, "large model");
  r.policy = std::make_unique<server::RoutePolicy>(
      route.config, std::vector<std::string>{model_id, std::filesystem::path(route.small_path).stem().string()});
  server.attach_routed(engine, *r.small, *r.policy, std::move(tmpl));
  std::fprintf(stderr, "tinfer serve: routing %s: large '%s', small '%s'", server::route_mode_name(route.config.mode),
               r.policy->ids()[server::kLargeModel].c_str(), r.policy->ids()[server::kSmallModel].c_str());
  if (route.config.mode == server::RouteMode::kEntropy)
    std::fprintf(stderr, ", prompt entropy > %.4f -> large, escalation %s", route.config.route_threshold,
                 route.config.escalate_threshold > 0
                     ? ("window " + std::to_string(route.config.escalate_window) + " mean > " +
                        std::to_string(route.config.escalate_threshold))
                           .c_str()
                     : "off");
  std::fprintf(stderr, "\n");
  return r;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  const std::vector<OptionSpec> spec = serve_options();
  const std::string usage =
      "tinfer serve -m MODEL [--host H] [--port P] [engine flags] [--served-model-name NAME]  (API key: env "
      "TINFER_API_KEY)\n       tinfer serve --model-small S --model-large L --route explicit|entropy "
      "[--route-threshold H] [--escalate-threshold E] [...]";
  Args args(argc, argv, spec, usage);
  const std::optional<RouteSetup> route = route_setup(args);
  const EngineConfig ec = serve_engine_config(argc, argv, args, route, spec, usage);
  const server::ServerConfig sc = server_config(args);

  // Signals are blocked in every thread (the mask is inherited) and taken by sigwait below, so no
  // handler runs in an arbitrary thread; writes to closed sockets fail with EPIPE instead of killing us.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  server::HttpServer server(sc);
  const int port = server.start();
  std::fprintf(stderr, "tinfer serve: listening on http://%s:%d (loading %s)\n", sc.host.c_str(), port,
               ec.model_path.c_str());
  std::unique_ptr<Engine> engine = Engine::create(ec);
  ChatTemplate tmpl = chat_template(args, engine->model());  // an unsupported template fails here, at start
  const std::string model_id = std::filesystem::path(ec.model_path).stem().string();
  Routed routed;  // routing only
  if (route)
    routed = attach_routed(server, *engine, ec, *route, std::move(tmpl), model_id);
  else
    server.attach(*engine, engine->tokenizer(), std::move(tmpl), model_id);
  std::fprintf(stderr, "tinfer serve: ready on http://%s:%d, model '%s', max_model_len %d%s\n", sc.host.c_str(), port,
               sc.served_model_name.empty() ? model_id.c_str() : sc.served_model_name.c_str(), engine->max_model_len(),
               sc.api_key.empty() ? "" : ", API key required");
  int sig = 0;
  sigwait(&sigs, &sig);
  std::fprintf(stderr, "tinfer serve: %s received, shutting down (grace %.1f s)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", sc.shutdown_grace_s);
  server.shutdown();
  std::fprintf(stderr, "tinfer serve: stopped\n");
  return 0;
}

}  // namespace tinfer::cli

// Routes, auth, errors in the OpenAI shape (404/405/413 included), streaming responses and
// graceful shutdown, on top of our own connection layer (http_conn.h).
#include "server/http_server.h"

#include "text/tool_calls/reasoning.h"

#include <sys/resource.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "tinfer/error.h"
#include "server/api_error.h"
#include "server/completion_call.h"
#include "server/engine_driver.h"
#include "server/http_conn.h"
#include "server/memory_trim.h"
#include "core/json_depth.h"
#include "server/openai_response.h"
#include "server/small_routes.h"

namespace tinfer::server {

using nlohmann::json;

bool constant_time_equal(const std::string& a, const std::string& b) {
  // Touches max(len) bytes whatever the contents; the length difference is folded into the result.
  size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

// RFC 9110 §11: the scheme is case-insensitive, then one or more spaces, then the credentials. Exactly one
// Authorization header: with two, a proxy in front and this server could each read a different one.
const char* api_key_refusal(const HttpRequest& req, const std::string& key) {
  static constexpr std::string_view kScheme = "bearer";
  const std::string* value = nullptr;
  for (const auto& [name, v] : req.headers) {
    if (name != "authorization") continue;
    if (value) return "more than one Authorization header";
    value = &v;
  }
  if (!value) return "missing API key (expected 'Authorization: Bearer <key>')";
  const std::string& v = *value;
  bool bearer = v.size() > kScheme.size() && v[kScheme.size()] == ' ';
  for (size_t i = 0; bearer && i < kScheme.size(); ++i)
    bearer = std::tolower(static_cast<unsigned char>(v[i])) == kScheme[i];
  if (!bearer) return "invalid API key (expected 'Authorization: Bearer <key>')";
  const size_t start = v.find_first_not_of(' ', kScheme.size());
  if (!constant_time_equal(start == std::string::npos ? std::string() : v.substr(start), key))
    return "invalid API key (expected 'Authorization: Bearer <key>')";
  return nullptr;
}

std::string percent_decode(std::string_view s) {
  auto nibble = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const int hi = s[i] == '%' && i + 2 < s.size() ? nibble(s[i + 1]) : -1;
    const int lo = hi >= 0 ? nibble(s[i + 2]) : -1;
    if (lo < 0 || hi * 16 + lo < 0x20 || hi * 16 + lo == 0x7f) {
      out += s[i];  // not an escape, or a control byte (%00 would cut error messages): kept as sent
      continue;
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

namespace {

// GET /v1/models/{id}: the one route with a parameter, registered under this key; the id is the rest of the path,
// percent-decoded (clients quote it, and a served name may hold '/').
constexpr std::string_view kModelPrefix = "/v1/models/";
constexpr const char* kModelRoute = "/v1/models/{id}";

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void send_error(HttpResponse& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 429 || e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(error_body(e), "application/json");
}

// The layer's own refusals, as OpenAI errors.
ApiError layer_error(int status, const std::string& message) {
  switch (status) {
    case 408:
      return ApiError(408, message, "", "request_timeout");
    case 413:
      return ApiError(413, message, "", "body_too_large");
    case 415:
      return ApiError(415, message, "", "unsupported_content_encoding");
    case 431:
      return ApiError(431, message, "", "headers_too_large");
    case 501:
      return ApiError(501, message, "", "not_implemented", "server_error");
    case 503:
      return ApiError(503, message, "", "server_busy", "service_unavailable");
    case 505:
      return ApiError(505, message, "", "http_version_not_supported", "server_error");
    default:
      return ApiError(status, message, "", "bad_request");
  }
}

// Body -> JSON, refusing absurd nesting before the recursive parser pays for it.
json parse_json_body(const std::string& body) {
  if (json_deeper_than(body, kMaxJsonDepth))
    throw ApiError(400, "JSON body nested deeper than " + std::to_string(kMaxJsonDepth) + " levels", "",
                   "json_too_deep");
  return json::parse(body);  // throws on broken JSON or invalid UTF-8
}

// The process's open-file limit bounds connections: raise the soft limit to the hard one and keep
// some descriptors for the model file, epoll and the like.
int connection_cap(int wanted) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return wanted;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur == RLIM_INFINITY) return wanted;
  long avail = static_cast<long>(rl.rlim_cur) - 64;
  return static_cast<int>(std::max(16L, std::min(static_cast<long>(wanted), avail)));
}

}  // namespace

struct HttpServer::Impl {
  ServerConfig config;
  std::unique_ptr<HttpListener> listener;
  Metrics metrics;
  std::unique_ptr<EngineDriver> driver;
  std::unique_ptr<ServerContext> ctx;
  std::atomic<bool> ready{false};
  std::atomic<bool> stopped{false};
  int64_t created = unix_now();
  using Route = std::function<void(const HttpRequest&, HttpResponse&)>;
  std::map<std::string, std::pair<std::string, Route>> routes;  // path -> (method, handler)

  // Throws 401 unless the request carries the API key (when one is set).
  void require_key(const HttpRequest& req) const {
    if (config.api_key.empty()) return;
    if (const char* why = api_key_refusal(req, config.api_key))
      throw ApiError(401, why, "", "invalid_api_key", "authentication_error");
  }

  // The route of a path (a /v1/models/{id} path finds that route), or null.
  const std::pair<std::string, Route>* find_route(const std::string& path) const {
    const bool model = path.size() > kModelPrefix.size() && path.starts_with(kModelPrefix);
    auto r = routes.find(model ? std::string(kModelRoute) : path);
    return r == routes.end() ? nullptr : &r->second;
  }

  // Auth and readiness for API routes, then the route body; every failure becomes an OpenAI error.
  void guarded(const HttpRequest& req, HttpResponse& res, bool api, const std::function<void(ServerContext&)>& fn) {
    try {
      if (api) require_key(req);
      if (!ready.load(std::memory_order_acquire))
        throw ApiError(503, "the model is loading", "", "loading", "service_unavailable");
      fn(*ctx);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const json::exception& e) {
      send_error(res, ApiError(400, std::string("invalid JSON body: ") + e.what(), "", "invalid_json"));
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, std::string("internal error: ") + e.what(), "", "internal_error", "server_error"));
    }
  }

  // Reactor thread, head received, body not yet read: refuse what is already known to fail, so an
  // unauthenticated client or a full queue never makes the server buffer (or parse) a body.
  // With a key set, every API path -- a route, or any /v1/ path, whatever the method -- is 401 before 404/405, so
  // an unauthenticated client learns nothing about the routes.
  bool check_head(const HttpRequest& head, HttpResponse& res) {
    const auto* r = find_route(head.path);
    if (head.path == "/health" || head.path == "/metrics" || (!r && !head.path.starts_with("/v1/"))) return false;
    const bool completion =
        r && r->first == head.method && (head.path == "/v1/completions" || head.path == "/v1/chat/completions");
    try {
      require_key(head);
      if (completion && ready.load(std::memory_order_acquire)) QueueSlot::refuse_if_full(*ctx);
    } catch (const ApiError& e) {
      send_error(res, e);
      count_error(res.status);
      return true;
    }
    return false;
  }

  void count_error(int status) {
    if (status < 400) return;
    metrics.requests_error++;
    if (status == 413) metrics.rejected_body++;
  }

  void completion(const HttpRequest& req, HttpResponse& res, bool chat) {
    guarded(req, res, true, [&](ServerContext& c) {
      QueueSlot::refuse_if_full(c);  // 429 before the body is parsed
      std::shared_ptr<CompletionCall> call;
      preprocess(c, req.body.size(), [&] {  // on the preprocessing threads; 429 when none is free in time
        NsTimer t(metrics.http_request_ns);
        json body = parse_json_body(req.body);
        call = CompletionCall::start(c, body, chat, req.body);
      });
      if (!call->warnings().empty()) {
        std::string w;
        for (const auto& s : call->warnings()) w += (w.empty() ? "" : "; ") + s;
        res.set_header("Warning", "299 tinfer \"" + w + "\"");
      }
      if (call->streaming()) {
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Accel-Buffering", "no");
      }
      res.content_type = call->streaming() ? "text/event-stream" : "application/json";
      res.stream = [call, this](const BodyWriter& write) {
        call->run(
            [&](std::string_view d) {
              NsTimer t(metrics.http_write_ns);
              return d.empty() || write(d);
            },
            [&] { return write.peer_gone(); });
      };
    });
  }

  void add(const std::string& method, const std::string& path, Route fn) { routes[path] = {method, std::move(fn)}; }

  void add_routes() {
    add("POST", "/v1/completions", [this](const HttpRequest& q, HttpResponse& r) { completion(q, r, false); });
    add("POST", "/v1/chat/completions", [this](const HttpRequest& q, HttpResponse& r) { completion(q, r, true); });
    add("GET", "/v1/models", [this](const HttpRequest& q, HttpResponse& r) {
      guarded(q, r, true,
              [&](ServerContext& c) { r.set_content(dump(models_response(c, created)), "application/json"); });
    });
    add("GET", kModelRoute, [this](const HttpRequest& q, HttpResponse& r) {
      guarded(q, r, true, [&](ServerContext& c) {
        const std::string id = percent_decode(std::string_view(q.path).substr(kModelPrefix.size()));
        r.set_content(dump(model_response(c, created, id)), "application/json");
      });
    });
    add("POST", "/tokenize", [this](const HttpRequest& q, HttpResponse& r) {
      guarded(q, r, true, [&](ServerContext& c) {
        preprocess(c, q.body.size(), [&] {
          r.set_content(dump(tokenize_response(c, parse_json_body(q.body))), "application/json");
        });
      });
    });
    add("POST", "/detokenize", [this](const HttpRequest& q, HttpResponse& r) {
      guarded(q, r, true, [&](ServerContext& c) {
        preprocess(c, q.body.size(), [&] {
          r.set_content(dump(detokenize_response(c, parse_json_body(q.body))), "application/json");
        });
      });
    });
    add("GET", "/health", [this](const HttpRequest&, HttpResponse& r) {
      bool ok = ready.load() && !(ctx && ctx->draining);
      r.status = ok ? 200 : 503;
      r.set_content(
          ok ? "{\"status\":\"ok\"}" : (ready ? "{\"status\":\"shutting_down\"}" : "{\"status\":\"loading\"}"),
          "application/json");
    });
    add("GET", "/metrics", [this](const HttpRequest&, HttpResponse& r) {
      EngineStats st = ready ? driver->stats() : EngineStats{};
      if (ready) metrics.long_lane_waiting = st.background_waiting;
      const OpProfile ops = ready ? driver->engine().op_profile() : OpProfile{};
      std::string page = metrics.render(st, ready ? ctx->queued.load() : 0, ready, ops);
      if (ready && ctx->grammars)
        metrics.render_grammar(page, ctx->grammars->stats(), st.grammar_jump_forward_tokens);
      if (ready && ctx->route)
        metrics.render_routing(page, route_mode_name(ctx->route->config().mode), ctx->route->ids(),
                               {driver->stats(kLargeModel), driver->stats(kSmallModel)});
      r.set_content(page, "text/plain; version=0.0.4");
    });
  }

  // Reactor thread (HttpFastRoute): /health and /metrics, whose answers take a few brief locks (the engines'
  // stats snapshots, histograms) and never wait for the engine, so a probe is answered while streams hold
  // every worker (issue 26 §2.2).
  bool answer_fast(const HttpRequest& q, HttpResponse& r) {
    if ((q.path != "/health" && q.path != "/metrics") || (q.method != "GET" && q.method != "HEAD")) return false;
    dispatch(q, r);
    return true;
  }

  // Worker thread: route by path, then method (405 with Allow when only the method is wrong). HEAD runs
  // the GET route; the layer sends its head only (RFC 9110 9.3.2).
  void dispatch(const HttpRequest& q, HttpResponse& r) {
    const auto* route = find_route(q.path);
    if (!route) {
      send_error(r, ApiError(404, "no route " + q.method + " " + q.path, "", "not_found"));
    } else if (route->first != q.method && !(q.method == "HEAD" && route->first == "GET")) {
      r.set_header("Allow", route->first == "GET" ? "GET, HEAD" : route->first);
      send_error(r, ApiError(405, "method " + q.method + " is not allowed on " + q.path + " (use " + route->first + ")",
                             "", "method_not_allowed"));
    } else {
      route->second(q, r);
    }
    count_error(r.status);
  }
};

HttpServer::HttpServer(ServerConfig config) : impl_(std::make_unique<Impl>()) {
  auto problems = config.validate();
  if (!problems.empty()) {
    std::string m = "invalid server settings:";
    for (const auto& p : problems) m += "\n  " + p;
    fail(m);
  }
  impl_->config = std::move(config);
}

HttpServer::~HttpServer() { shutdown(); }

int HttpServer::start() {
  Impl& s = *impl_;
  const ServerConfig& c = s.config;
  // Before any worker thread allocates: an arena per preprocessing thread, and two for the rest (memory_trim.h).
  limit_heap_arenas(preprocess_threads(c.max_preprocessing) + 2);
  HttpConnConfig hc;
  hc.host = c.host;
  hc.port = c.port;
  hc.worker_threads = c.http_threads;
  hc.max_connections = connection_cap(c.max_connections);
  hc.limits.max_header_bytes = static_cast<size_t>(c.max_header_bytes);
  hc.limits.max_headers = static_cast<size_t>(c.max_headers);
  hc.limits.max_body_bytes = static_cast<size_t>(c.max_body_bytes);
  hc.header_timeout_s = c.header_timeout_s;
  hc.body_timeout_s = c.body_timeout_s;
  hc.keep_alive_s = c.keep_alive_s;
  hc.send_stall_s = c.send_stall_s;
  hc.max_buffered_bytes = std::max<size_t>(size_t{256} << 20, 4 * hc.limits.max_body_bytes);
  s.add_routes();
  s.listener = std::make_unique<HttpListener>(
      hc, [&s](const HttpRequest& q, HttpResponse& r) { s.dispatch(q, r); },
      [&s](int status, const std::string& message, HttpResponse& r) {
        send_error(r, layer_error(status, message));
        s.count_error(status);
      },
      [&s](const HttpRequest& head, HttpResponse& r) { return s.check_head(head, r); },
      [&s](const HttpRequest& q, HttpResponse& r) { return s.answer_fast(q, r); });
  int port = s.listener->bind();
  s.listener->start();
  return port;
}

namespace {
// Readiness means a generation step works: one greedy token from BOS (or token 0) on each engine.
void warm_up(EngineDriver& driver, int engine, const Tokenizer& tokenizer) {
  GenerationRequest warm;
  warm.prompt = {tokenizer.bos() >= 0 ? tokenizer.bos() : 0};
  warm.sampling.temperature = 0;
  warm.max_tokens = 1;
  warm.ignore_eos = true;
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  auto flag = std::make_shared<std::atomic<bool>>(false);
  driver.submit(engine, driver.engine(engine).resolve(warm), [done, flag](const TokenEvent& e) {
    if (e.finished && !flag->exchange(true)) done->set_value();
  });
  check(fut.wait_for(std::chrono::seconds(120)) == std::future_status::ready, "warm-up generation did not finish");
}
// The model's vocabulary as the grammar engine sees it; a completed grammar ends on the model's end-of-generation ids.
std::unique_ptr<grammar::GrammarCompiler> make_grammar_compiler(const ServerConfig& cfg, const Tokenizer& tok,
                                                                const Engine& engine) {
  grammar::GrammarCompilerConfig gc;
  gc.cache_bytes = cfg.grammar_cache_bytes;
  const RequestLimits& lim = engine.request_limits();  // eos_ids: the model's end-of-generation ids, found once
  return std::make_unique<grammar::GrammarCompiler>(tok, lim.n_vocab, lim.eos_ids, gc);
}
// --tool-call-parser NAME, else the row that recognises the template; reasoning when the template speaks of <think>.
void choose_tool_format(ServerContext& c) {
  const std::string& tmpl = c.chat_template.source();
  if (!c.config.tool_call_parser.empty()) {
    c.tool_format = toolcall::find_tool_call_format(c.config.tool_call_parser);
    check(c.tool_format != nullptr, "--tool-call-parser: unknown format '" + c.config.tool_call_parser +
                                        "' (hermes, llama3_json, mistral, pythonic, qwen3_coder)");
  } else {
    c.tool_format = &toolcall::detect_tool_call_format(tmpl);
  }
  c.reasoning = tmpl.find("<think>") != std::string::npos || tmpl.find("</think>") != std::string::npos;
  c.opens_reasoning = c.reasoning && toolcall::template_opens_reasoning(tmpl);
}
}  // namespace

void HttpServer::attach(Engine& engine, const Tokenizer& tokenizer, ChatTemplate chat_template, std::string model_id) {
  Impl& s = *impl_;
  s.driver = std::make_unique<EngineDriver>(engine);
  s.ctx = std::unique_ptr<ServerContext>(new ServerContext{
      s.config, *s.driver, tokenizer, std::move(chat_template),
      s.config.served_model_name.empty() ? model_id : s.config.served_model_name, engine.max_model_len(), s.metrics});
  s.ctx->grammars = make_grammar_compiler(s.config, tokenizer, engine);
  choose_tool_format(*s.ctx);
  prepare_preprocessing(*s.ctx);
  warm_up(*s.driver, 0, tokenizer);
  s.ready.store(true, std::memory_order_release);
}

void HttpServer::attach_routed(Engine& large, Engine& small, const RoutePolicy& policy, ChatTemplate chat_template) {
  Impl& s = *impl_;
  check(s.config.served_model_name.empty(), "--served-model-name names one model; routed models keep their ids");
  s.driver = std::make_unique<EngineDriver>(std::vector<Engine*>{&large, &small});  // kLargeModel, kSmallModel
  s.ctx =
      std::unique_ptr<ServerContext>(new ServerContext{s.config, *s.driver, large.tokenizer(), std::move(chat_template),
                                                       policy.ids()[kLargeModel], large.max_model_len(), s.metrics});
  s.ctx->route = &policy;
  s.ctx->grammars = make_grammar_compiler(s.config, large.tokenizer(), large);
  choose_tool_format(*s.ctx);
  prepare_preprocessing(*s.ctx);
  warm_up(*s.driver, kLargeModel, large.tokenizer());
  warm_up(*s.driver, kSmallModel, large.tokenizer());
  s.ready.store(true, std::memory_order_release);
}

bool HttpServer::ready() const { return impl_->ready.load(); }

void HttpServer::shutdown() {
  Impl& s = *impl_;
  if (s.stopped.exchange(true)) return;
  if (s.ctx) {
    s.ctx->draining = true;
    auto grace =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s.config.shutdown_grace_s));
    s.ctx->abort_deadline_ns = (std::chrono::steady_clock::now() + grace).time_since_epoch().count();
  }
  // Stop accepting now; idle connections close at once, partly received requests at the grace
  // deadline; returns once every handler has finished, which the abort deadline bounds.
  if (s.listener)
    s.listener->stop(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(s.config.shutdown_grace_s)));
  if (s.driver) s.driver->stop();
}

}  // namespace tinfer::server

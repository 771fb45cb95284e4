// httplib wiring: routes, auth, errors in the OpenAI shape (404/405/413 included), streaming through
// chunked content providers, a thread pool sized for hundreds of open streams, and graceful shutdown.
#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "server/api_error.h"
#include "server/completion_call.h"
#include "server/engine_driver.h"
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

namespace {

// Route -> allowed method, for 405 (httplib itself only knows "no handler": 404).
const std::map<std::string, std::string> kRoutes = {{"/v1/completions", "POST"}, {"/v1/chat/completions", "POST"},
                                                    {"/v1/models", "GET"},       {"/health", "GET"},
                                                    {"/metrics", "GET"},         {"/tokenize", "POST"},
                                                    {"/detokenize", "POST"}};

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Debian's libcpp-httplib is built with a listen backlog of 5: a burst of a few hundred connects
// overflows it and clients wait for SYN retransmits (1 s, 3 s, ...). listen() again on the bound
// socket (Linux updates the backlog in place); svr_sock_ is protected, hence the subclass.
class BacklogServer : public httplib::Server {
 public:
  void widen_backlog(int n) { ::listen(svr_sock_, n); }
};

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 429 || e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(error_body(e), "application/json");
}

}  // namespace

struct HttpServer::Impl {
  ServerConfig config;
  BacklogServer svr;
  std::thread listen_thread;
  Metrics metrics;
  std::unique_ptr<EngineDriver> driver;
  std::unique_ptr<ServerContext> ctx;
  std::atomic<bool> ready{false};
  std::atomic<bool> stopped{false};
  int64_t created = unix_now();

  // Auth and readiness for API routes, then the route body; every failure becomes an OpenAI error.
  void guarded(const httplib::Request& req, httplib::Response& res, bool api,
               const std::function<void(ServerContext&)>& fn) {
    try {
      if (api && !config.api_key.empty()) {
        std::string h = req.get_header_value("Authorization");
        if (!constant_time_equal(h, "Bearer " + config.api_key))
          throw ApiError(401, "missing or invalid API key (expected 'Authorization: Bearer <key>')", "",
                         "invalid_api_key", "authentication_error");
      }
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

  void completion(const httplib::Request& req, httplib::Response& res, bool chat) {
    guarded(req, res, true, [&](ServerContext& c) {
      json body = json::parse(req.body);  // throws on broken JSON or invalid UTF-8
      std::shared_ptr<CompletionCall> call = CompletionCall::start(c, body, chat);
      if (!call->warnings().empty()) {
        std::string w;
        for (const auto& s : call->warnings()) w += (w.empty() ? "" : "; ") + s;
        res.set_header("Warning", "299 tinfer \"" + w + "\"");
      }
      if (call->streaming()) {
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Accel-Buffering", "no");
      }
      auto provider = [call](size_t, httplib::DataSink& sink) {
        call->run([&](std::string_view d) { return d.empty() || sink.write(d.data(), d.size()); });
        sink.done();
        return true;
      };
      res.set_chunked_content_provider(call->streaming() ? "text/event-stream" : "application/json", provider);
    });
  }

  void routes() {
    svr.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& r) { completion(q, r, false); });
    svr.Post("/v1/chat/completions",
             [this](const httplib::Request& q, httplib::Response& r) { completion(q, r, true); });
    svr.Get("/v1/models", [this](const httplib::Request& q, httplib::Response& r) {
      guarded(q, r, true,
              [&](ServerContext& c) { r.set_content(dump(models_response(c, created)), "application/json"); });
    });
    svr.Post("/tokenize", [this](const httplib::Request& q, httplib::Response& r) {
      guarded(q, r, true, [&](ServerContext& c) {
        r.set_content(dump(tokenize_response(c, json::parse(q.body))), "application/json");
      });
    });
    svr.Post("/detokenize", [this](const httplib::Request& q, httplib::Response& r) {
      guarded(q, r, true, [&](ServerContext& c) {
        r.set_content(dump(detokenize_response(c, json::parse(q.body))), "application/json");
      });
    });
    svr.Get("/health", [this](const httplib::Request&, httplib::Response& r) {
      bool ok = ready.load() && !(ctx && ctx->draining);
      r.status = ok ? 200 : 503;
      r.set_content(
          ok ? "{\"status\":\"ok\"}" : (ready ? "{\"status\":\"shutting_down\"}" : "{\"status\":\"loading\"}"),
          "application/json");
    });
    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
      EngineStats st = ready ? driver->stats() : EngineStats{};
      if (ready) metrics.long_lane_waiting = st.background_waiting;
      r.set_content(metrics.render(st, ready ? ctx->queued.load() : 0, ready), "text/plain; version=0.0.4");
    });
    // Every >= 400 response passes here: fill in an OpenAI-shaped body where the handler left none
    // (httplib's own 404, 413, 400) and turn "no handler for this method" into 405.
    svr.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& q, httplib::Response& r) {
      metrics.requests_error++;
      if (r.status == 413) metrics.rejected_body++;
      if (!r.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      auto route = kRoutes.find(q.path);
      if (r.status == 404 && route != kRoutes.end()) {
        r.set_header("Allow", route->second);
        send_error(
            r, ApiError(405, "method " + q.method + " is not allowed on " + q.path + " (use " + route->second + ")", "",
                        "method_not_allowed"));
      } else if (r.status == 404) {
        send_error(r, ApiError(404, "no route " + q.method + " " + q.path, "", "not_found"));
      } else if (r.status == 413) {
        send_error(r, ApiError(413, "request body larger than " + std::to_string(config.max_body_bytes) + " bytes", "",
                               "body_too_large"));
      } else {
        send_error(r, ApiError(r.status, "bad request", "", "bad_request"));
      }
      return httplib::Server::HandlerResponse::Handled;
    }));
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
  int threads = c.http_threads;
  s.svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.svr.set_payload_max_length(static_cast<size_t>(c.max_body_bytes));
  s.svr.set_keep_alive_timeout(c.keep_alive_s);
  s.svr.set_tcp_nodelay(true);  // SSE chunks are small writes: Nagle + delayed ACK would stall them ~40 ms
  // httplib's default sets SO_REUSEPORT, which lets a second server bind the same port and silently
  // share its connections; SO_REUSEADDR alone still allows a quick restart after TIME_WAIT.
  s.svr.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s.svr.set_read_timeout(30, 0);
  s.svr.set_write_timeout(10, 0);
  s.routes();
  int port = c.port;
  if (port == 0) {
    port = s.svr.bind_to_any_port(c.host);
    check(port > 0, "cannot bind " + c.host + " to a free port");
  } else {
    check(s.svr.bind_to_port(c.host, port), "cannot bind " + c.host + ":" + std::to_string(port) + " (in use?)");
  }
  s.svr.widen_backlog(1024);
  s.listen_thread = std::thread([&s] { s.svr.listen_after_bind(); });
  return port;
}

void HttpServer::attach(Engine& engine, const Tokenizer& tokenizer, std::string chat_template, std::string model_id) {
  Impl& s = *impl_;
  s.driver = std::make_unique<EngineDriver>(engine);
  s.ctx = std::unique_ptr<ServerContext>(
      new ServerContext{s.config, *s.driver, tokenizer, std::move(chat_template),
                        s.config.served_model_name.empty() ? model_id : s.config.served_model_name,
                        engine.max_model_len(), s.metrics});
  // Readiness means a generation step works: one greedy token from BOS (or token 0).
  GenerationRequest warm;
  warm.prompt = {tokenizer.bos() >= 0 ? tokenizer.bos() : 0};
  warm.sampling.temperature = 0;
  warm.max_tokens = 1;
  warm.ignore_eos = true;
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  auto flag = std::make_shared<std::atomic<bool>>(false);
  s.driver->submit(
      engine.resolve(warm),
      [done, flag](const TokenEvent& e) {
        if (e.finished && !flag->exchange(true)) done->set_value();
      });
  check(fut.wait_for(std::chrono::seconds(120)) == std::future_status::ready, "warm-up generation did not finish");
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
  // Stop accepting now; listen_after_bind() returns once every connection's handler has finished,
  // which the abort deadline bounds.
  s.svr.stop();
  if (s.listen_thread.joinable()) s.listen_thread.join();
  if (s.driver) s.driver->stop();
}

}  // namespace tinfer::server

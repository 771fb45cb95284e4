// The request lifecycle: body -> CompletionRequest -> prompt tokens -> GenerationRequest (engine) ->
// events (engine thread) -> EventQueue -> SampleOutput per choice -> SSE chunks or one JSON body.
// The engine thread only appends to the queue; detokenizing, stop matching and aborts happen here.
#include "server/completion_call.h"

#include <algorithm>
#include <condition_variable>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "core/error.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/routed_request.h"

namespace tinfer::server {

using Clock = std::chrono::steady_clock;

namespace {
[[noreturn]] void queue_full(ServerContext& ctx) {
  ctx.metrics.rejected_queue++;
  throw ApiError(429,
                 "the server's request queue is full (" + std::to_string(ctx.config.max_queued_requests) +
                     " waiting); retry later",
                 "", "queue_full", "rate_limit_error");
}
}  // namespace

QueueSlot::QueueSlot(ServerContext& ctx) : ctx_(ctx) {
  if (ctx_.queued.fetch_add(1) >= ctx_.config.max_queued_requests) {
    ctx_.queued.fetch_sub(1);
    held_ = false;
    queue_full(ctx_);
  }
}

void QueueSlot::refuse_if_full(ServerContext& ctx) {
  if (ctx.queued.load() >= ctx.config.max_queued_requests) queue_full(ctx);
}

void QueueSlot::release() {
  if (held_) ctx_.queued.fetch_sub(1);
  held_ = false;
}

namespace {

// One event as queued: which engine request ("attempt" of its prompt, see routed_request.h) it came from.
struct QueuedEvent {
  TokenEvent ev;
  int attempt = 0;
};

// Engine thread -> HTTP thread hand-over for one request's events.
struct EventQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<QueuedEvent> events;

  void push(const TokenEvent& e, int attempt) {
    {
      std::lock_guard<std::mutex> lk(mu);
      events.push_back({e, attempt});
    }
    cv.notify_one();
  }
  std::vector<QueuedEvent> wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait_for(lk, timeout, [&] { return !events.empty(); });
    return std::exchange(events, {});
  }
};

std::string random_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  uint64_t x =
      static_cast<uint64_t>(Clock::now().time_since_epoch().count()) ^ (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
  char b[32];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(x));
  return std::string(prefix) + b;
}

}  // namespace

// One prompt of the request: its own engine request (resolved by the engine, routed when the server routes
// between models) and queue slot. Its samples are choices [index * n, index * n + n) of the response, as OpenAI
// indexes a list of prompts.
struct PromptCall {
  std::vector<int32_t> prompt;
  std::string echo;  // prepended to each of its choices when the request asks for echo
  std::unique_ptr<RoutedRequest> engine;  // resolved at start(), submitted once every prompt is valid
  std::unique_ptr<QueueSlot> slot;        // released at its first delivered event
  bool got_first = false;
  int cached_tokens = 0;
};

struct CompletionCall::State {
  State(ServerContext& c) : ctx(c) {}
  ~State() {
    for (size_t i = 0; i < prompts.size(); ++i) {
      PromptCall& p = prompts[i];
      if (!p.engine) continue;
      if (p.engine->submitted() && !completed) p.engine->cancel();
      p.engine->report(meta.id, static_cast<int>(i));
    }
  }

  ServerContext& ctx;
  CompletionRequest req;
  std::vector<PromptCall> prompts;
  std::vector<std::string> warnings;
  ResponseMeta meta;
  std::shared_ptr<EventQueue> queue = std::make_shared<EventQueue>();
  std::vector<SampleOutput> samples;  // [prompts x n]
  std::vector<bool> engine_finished;
  bool completed = false;
  Clock::time_point arrival = Clock::now(), first_token, last_token;
  bool got_first = false;
};

CompletionCall::CompletionCall(std::unique_ptr<State> s) : s_(std::move(s)) {}
CompletionCall::~CompletionCall() = default;
bool CompletionCall::streaming() const { return s_->req.stream; }
const std::vector<std::string>& CompletionCall::warnings() const { return s_->warnings; }

namespace {

// A completions prompt's token ids (BOS first when the tokenizer adds one to text). Ids are checked against
// the vocabulary when the engine resolves the request.
std::vector<int32_t> encode_prompt(const Tokenizer& tok, const PromptInput& in) {
  if (in.is_ids) return in.ids;
  std::vector<int32_t> prompt;
  if (tok.add_bos_by_default() && tok.bos() >= 0) prompt.push_back(tok.bos());
  auto ids = tok.encode(in.text, false, false);
  prompt.insert(prompt.end(), ids.begin(), ids.end());
  return prompt;
}

}  // namespace

std::unique_ptr<CompletionCall> CompletionCall::start(ServerContext& ctx, const nlohmann::json& body, bool chat) {
  if (ctx.draining) throw ApiError(503, "the server is shutting down", "", "shutting_down", "service_unavailable");
  CompletionRequest req = parse_completion_request(body, chat);
  const Tokenizer& tok = ctx.tokenizer;
  auto s = std::make_unique<State>(ctx);
  const size_t n_prompts = chat ? 1 : req.prompts.size();
  for (size_t p = 0; p < n_prompts; ++p) {
    PromptCall pc;
    const std::string pname = chat ? "messages" : n_prompts > 1 ? "prompt[" + std::to_string(p) + "]" : "prompt";
    if (chat) {
      ChatOptions co;
      co.tools_json = req.tools_json;
      try {
        pc.prompt = encode_chat(tok, ctx.chat_template, req.messages, co, tok.add_bos_by_default() && tok.bos() >= 0);
      } catch (const Error& e) {  // the template refused these messages (raise_exception, a type error...)
        throw ApiError(400, std::string("the chat template cannot render these messages: ") + e.what(), "messages",
                       "invalid_value");
      }
    } else {
      pc.prompt = encode_prompt(tok, req.prompts[p]);
      if (req.echo)
        pc.echo = req.prompts[p].is_ids ? tok.decode(req.prompts[p].ids) : req.prompts[p].text;
    }
    if (pc.prompt.empty()) throw ApiError(400, "'" + pname + "' encodes to no tokens", pname, "invalid_value");
    // The engine resolves the request once (max_tokens default/cap/context room, n, stop ids, priority);
    // the server only maps its RequestError to a 400 naming the field.
    GenerationRequest gr;
    gr.prompt = pc.prompt;
    gr.sampling = req.sampling;
    gr.max_tokens = req.max_tokens;
    gr.ignore_eos = req.ignore_eos;
    gr.stop_token_ids = req.stop_token_ids;
    gr.n = req.n;
    gr.speculative = req.speculative;
    gr.use_beam_search = req.use_beam_search;
    gr.length_penalty = req.length_penalty;
    gr.early_stopping = req.early_stopping;
    try {  // the model name (404 when unknown) and the route pick the engine; that engine resolves
      pc.engine = std::make_unique<RoutedRequest>(ctx, req.model, std::move(gr));
    } catch (const RequestError& e) {
      throw ApiError(400, e.what(), e.field() == "prompt" ? pname : e.field(), e.code());
    }
    for (const std::string& w : pc.engine->resolved().warnings)  // each said once, however many prompts it applies to
      if (std::find(s->warnings.begin(), s->warnings.end(), w) == s->warnings.end()) s->warnings.push_back(w);
    s->prompts.push_back(std::move(pc));
  }
  // A whole response is built in memory: bound its entries (tokens and top-logprob alternatives).
  if (!req.stream) {
    const int64_t per_token = req.sampling.logprobs ? 1 + req.sampling.top_logprobs : 1;
    int64_t entries = 0;
    for (const auto& pc : s->prompts) entries += int64_t{req.n} * pc.engine->resolved().max_tokens * per_token;
    if (entries > ctx.config.max_response_entries)
      throw ApiError(400,
                     "the response would hold up to " + std::to_string(entries) +
                         " token entries (prompts x n x max_tokens x (1 + top logprobs)), above this server's "
                         "limit of " + std::to_string(ctx.config.max_response_entries) +
                         "; lower 'n', 'max_tokens' or the logprobs count, or use 'stream': true",
                     "max_tokens", "response_too_large");
  }
  for (auto& pc : s->prompts) pc.slot = std::make_unique<QueueSlot>(ctx);  // 429 when the queue is full

  s->meta = {random_id(chat ? "chatcmpl-" : "cmpl-"),
             static_cast<int64_t>(
                 std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                     .count()),
             s->prompts.front().engine->model_id(), chat, req.sampling.logprobs};
  for (const auto& pc : s->prompts) {
    const bool at_text_start = prompt_is_bos_only(tok, pc.prompt);
    for (int i = 0; i < req.n; ++i) s->samples.emplace_back(tok, req.stop, req.sampling.logprobs, at_text_start);
  }
  s->engine_finished.assign(s->samples.size(), false);

  std::shared_ptr<EventQueue> q = s->queue;
  for (size_t p = 0; p < s->prompts.size(); ++p) {
    PromptCall& pc = s->prompts[p];
    const int base = static_cast<int>(p) * req.n;  // this prompt's first choice index
    pc.engine->submit([q, base](const TokenEvent& e, int attempt) {
      TokenEvent c = e;
      c.index += base;
      q->push(c, attempt);
    });
  }
  s->req = std::move(req);
  return std::unique_ptr<CompletionCall>(new CompletionCall(std::move(s)));
}

void CompletionCall::run(const WriteFn& write) {
  State& s = *s_;
  ServerContext& ctx = s.ctx;
  const bool stream = s.req.stream;
  const auto heartbeat = std::chrono::milliseconds(ctx.config.heartbeat_ms);
  auto all_done = [&] {
    for (const auto& x : s.samples)
      if (!x.done()) return false;
    return true;
  };
  auto gone = [&] {
    ctx.metrics.client_disconnects++;
    // ~State cancels every submitted engine request: the engine frees the KV blocks at its next step.
  };
  std::string out;
  Clock::time_point last_write = Clock::now();
  const int n = s.req.n;
  auto prompt_of = [&](size_t choice) -> PromptCall& { return s.prompts[choice / static_cast<size_t>(n)]; };
  // Streams open with the chat role, or with the echoed prompt (as vLLM does), for every choice.
  if (stream && (s.meta.chat || s.req.echo)) {
    for (size_t i = 0; i < s.samples.size(); ++i)
      out += sse(stream_chunk(s.meta, static_cast<int>(i), prompt_of(i).echo, nullptr, "", s.meta.chat));
    if (!write(out)) return gone();
  }
  while (!all_done()) {
    std::vector<QueuedEvent> evs = s.queue->wait(heartbeat);
    out.clear();
    std::optional<NsTimer> respond_timer(std::in_place, ctx.metrics.http_respond_ns);  // event handling, chunks
    for (const QueuedEvent& qe : evs) {
      const TokenEvent& ev = qe.ev;
      if (ev.index < 0 || ev.index >= static_cast<int>(s.samples.size())) continue;
      PromptCall& pc = prompt_of(static_cast<size_t>(ev.index));
      if (!pc.engine->filter(ev, qe.attempt)) continue;  // an abandoned attempt's, or the route moved
      if (ev.has_token || ev.finished) pc.slot->release();
      if (ev.has_token) {
        s.last_token = Clock::now();
        if (!pc.got_first) {
          pc.got_first = true;
          pc.cached_tokens = ev.cached_prompt_tokens;
        }
        if (!s.got_first) {
          s.got_first = true;
          s.first_token = s.last_token;
          ctx.metrics.ttft.observe(std::chrono::duration<double>(s.first_token - s.arrival).count());
        }
      }
      if (ev.finished) s.engine_finished[ev.index] = true;
      SampleOutput& so = s.samples[ev.index];
      bool was_done = so.done();
      std::string delta = so.on_event(ev);
      if (!was_done && so.stopped_by_string()) ctx.metrics.stop_string_hits++;
      if (stream && !was_done) {
        auto recs = so.take_new_records();
        ResponseMeta m = s.meta;
        m.model = pc.engine->model_id();  // each chunk names the model that produced it
        if (!delta.empty() || !recs.empty() || so.done())
          out += sse(stream_chunk(m, ev.index, delta, &recs, so.done() ? so.finish_reason() : "", false));
      }
    }
    if (ctx.draining && ctx.past_abort_deadline() && !all_done()) {
      ctx.metrics.server_aborts++;
      for (size_t i = 0; i < s.samples.size(); ++i) {
        if (s.samples[i].done()) continue;
        std::string delta = s.samples[i].finish_abort();
        auto recs = s.samples[i].take_new_records();
        if (stream) out += sse(stream_chunk(s.meta, static_cast<int>(i), delta, &recs, "abort", false));
      }
    }
    // A failed write is how the HTTP layer notices a vanished client: after a quiet
    // heartbeat period, send an SSE comment (streams) or a leading JSON space (whole responses).
    if (out.empty() && !all_done() && Clock::now() - last_write >= heartbeat) out = stream ? ": keep-alive\n\n" : " ";
    respond_timer.reset();  // (writes are timed as http_write)
    if (!out.empty()) {
      if (!write(out)) return gone();
      last_write = Clock::now();
    }
  }
  // Samples ended by a stop string (or an abort) may still be running in the engine.
  Usage u;
  for (size_t p = 0; p < s.prompts.size(); ++p) {
    PromptCall& pc = s.prompts[p];
    bool engine_done = true;
    for (int j = 0; j < n; ++j) engine_done = engine_done && s.engine_finished[p * n + j];
    if (!engine_done) pc.engine->cancel();
    u.prompt_tokens += static_cast<int>(pc.prompt.size());
    u.cached_tokens += pc.cached_tokens;
  }
  s.completed = true;
  for (const auto& x : s.samples) u.completion_tokens += x.completion_tokens();
  // Routing: the answering model (the first prompt's, when a list of prompts went to different ones) and, per
  // prompt, how it was routed (the non-standard "tinfer_route"; streams carry it in the usage chunk).
  s.meta.model = s.prompts.front().engine->model_id();
  if (ctx.route) {
    nlohmann::json routes = nlohmann::json::array();
    for (const PromptCall& pc : s.prompts) routes.push_back(route_json(pc.engine->outcome(), pc.engine->model_id()));
    s.meta.extra["tinfer_route"] = std::move(routes);
    // Counted and logged before the last bytes go out, so a client that reads /metrics right after its answer sees
    // this request (report() runs once; ~State reports the requests that end any other way).
    for (size_t p = 0; p < s.prompts.size(); ++p) s.prompts[p].engine->report(s.meta.id, static_cast<int>(p));
  }
  bool ok;
  if (stream) {
    out.clear();
    if (s.req.include_usage) out += sse(usage_chunk(s.meta, u));
    out += "data: [DONE]\n\n";
    ok = write(out);
  } else {
    std::vector<std::string> echo;
    if (s.req.echo)
      for (size_t i = 0; i < s.samples.size(); ++i) echo.push_back(prompt_of(i).echo);
    ok = write_full_response(s.meta, s.samples, echo, u, s.warnings, write);  // a choice at a time
  }
  auto end = Clock::now();
  ctx.metrics.e2e.observe(std::chrono::duration<double>(end - s.arrival).count());
  int n_out = s.samples.empty() ? 0 : s.samples[0].completion_tokens();
  if (s.got_first && n_out > 1)
    ctx.metrics.tpot.observe(std::chrono::duration<double>(s.last_token - s.first_token).count() / (n_out - 1));
  if (ok)
    ctx.metrics.requests_ok++;
  else
    ctx.metrics.client_disconnects++;
}

}  // namespace tinfer::server

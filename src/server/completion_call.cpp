// The request lifecycle: body -> CompletionRequest -> prompt tokens -> GenerationRequest (engine) ->
// events (engine thread) -> EventQueue -> SampleOutput per choice -> SSE chunks or one JSON body.
// The engine thread only appends to the queue; detokenizing, stop matching and aborts happen here.
#include "server/completion_call.h"

#include <condition_variable>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/error.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

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

// Engine thread -> HTTP thread hand-over for one request's events.
struct EventQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<TokenEvent> events;

  void push(const TokenEvent& e) {
    {
      std::lock_guard<std::mutex> lk(mu);
      events.push_back(e);
    }
    cv.notify_one();
  }
  std::vector<TokenEvent> wait(std::chrono::milliseconds timeout) {
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

struct CompletionCall::State {
  State(ServerContext& c) : ctx(c), slot(c) {}
  ~State() {
    if (ticket && !completed) ctx.driver.cancel(ticket, long_lane);
    slot.release();
  }

  ServerContext& ctx;
  QueueSlot slot;  // constructed first: a full queue rejects before any work
  CompletionRequest req;
  std::vector<int32_t> prompt;
  bool long_lane = false;
  std::vector<std::string> warnings;
  ResponseMeta meta;
  std::shared_ptr<EventQueue> queue = std::make_shared<EventQueue>();
  std::shared_ptr<Ticket> ticket;
  std::vector<SampleOutput> samples;
  std::vector<bool> engine_finished;
  bool completed = false;
  int cached_tokens = 0;
  Clock::time_point arrival = Clock::now(), first_token, last_token;
  bool got_first = false;
};

CompletionCall::CompletionCall(std::unique_ptr<State> s) : s_(std::move(s)) {}
CompletionCall::~CompletionCall() = default;
bool CompletionCall::streaming() const { return s_->req.stream; }
const std::vector<std::string>& CompletionCall::warnings() const { return s_->warnings; }

std::unique_ptr<CompletionCall> CompletionCall::start(ServerContext& ctx, const nlohmann::json& body, bool chat) {
  if (ctx.draining) throw ApiError(503, "the server is shutting down", "", "shutting_down", "service_unavailable");
  CompletionRequest req = parse_completion_request(body, chat);
  if (!req.model.empty() && req.model != ctx.model_id)
    throw ApiError(400, "the model '" + req.model + "' does not exist; this server serves '" + ctx.model_id + "'",
                   "model", "model_not_found");
  const Tokenizer& tok = ctx.tokenizer;
  std::vector<int32_t> prompt;
  if (chat) {
    std::string text = apply_chat_template(ctx.chat_template, req.messages, true);
    if (tok.add_bos_by_default() && tok.bos() >= 0) prompt.push_back(tok.bos());
    auto ids = tok.encode(text, false, true);
    prompt.insert(prompt.end(), ids.begin(), ids.end());
  } else if (req.prompt_is_ids) {
    for (size_t i = 0; i < req.prompt_ids.size(); ++i)
      if (req.prompt_ids[i] >= tok.n_vocab())
        throw ApiError(400,
                       "'prompt[" + std::to_string(i) + "]' is not a token id (vocabulary size " +
                           std::to_string(tok.n_vocab()) + ")",
                       "prompt", "invalid_value");
    prompt = req.prompt_ids;
  } else {
    if (tok.add_bos_by_default() && tok.bos() >= 0) prompt.push_back(tok.bos());
    auto ids = tok.encode(req.prompt_text, false, false);
    prompt.insert(prompt.end(), ids.begin(), ids.end());
  }
  const char* pname = chat ? "messages" : "prompt";
  if (prompt.empty()) throw ApiError(400, std::string("'") + pname + "' encodes to no tokens", pname, "invalid_value");
  if (static_cast<int>(prompt.size()) >= ctx.max_model_len)
    throw ApiError(400,
                   "this model's maximum context length is " + std::to_string(ctx.max_model_len) +
                       " tokens, but the prompt has " + std::to_string(prompt.size()) + " tokens",
                   pname, "context_length_exceeded");

  auto s = std::make_unique<State>(ctx);  // takes the queue slot (429 when full)
  int mt = req.max_tokens > 0 ? req.max_tokens : ctx.default_max_tokens;
  if (mt > ctx.max_tokens_cap) {
    s->warnings.push_back("max_tokens " + std::to_string(mt) + " exceeds the server cap; clamped to " +
                          std::to_string(ctx.max_tokens_cap));
    mt = ctx.max_tokens_cap;
  }
  int room = ctx.max_model_len - static_cast<int>(prompt.size());
  if (mt > room) {
    s->warnings.push_back("max_tokens " + std::to_string(mt) +
                          " does not fit the context after the prompt; clamped to " + std::to_string(room));
    mt = room;
  }
  s->long_lane = mt > ctx.config.long_request_tokens;
  s->meta = {random_id(chat ? "chatcmpl-" : "cmpl-"),
             static_cast<int64_t>(
                 std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                     .count()),
             ctx.model_id, chat, req.sampling.logprobs};
  const bool at_text_start = prompt_is_bos_only(tok, prompt);
  for (int i = 0; i < req.n; ++i) s->samples.emplace_back(tok, req.stop, req.sampling.logprobs, at_text_start);
  s->engine_finished.assign(req.n, false);

  GenerationRequest gr;
  gr.prompt = prompt;
  gr.sampling = req.sampling;
  gr.max_tokens = mt;
  gr.ignore_eos = req.ignore_eos;
  gr.n = req.n;
  std::shared_ptr<EventQueue> q = s->queue;
  try {
    s->ticket = ctx.driver.submit(
        std::move(gr), [q](const TokenEvent& e) { q->push(e); }, s->long_lane);
  } catch (const Error& e) {
    throw ApiError(400, e.what(), "", "invalid_request");
  }
  s->prompt = std::move(prompt);
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
    // ~State cancels the ticket: the engine frees the KV blocks at its next step.
  };
  std::string out;
  Clock::time_point last_write = Clock::now();
  if (stream && s.meta.chat) {
    for (size_t i = 0; i < s.samples.size(); ++i)
      out += sse(stream_chunk(s.meta, static_cast<int>(i), "", nullptr, "", true));
    if (!write(out)) return gone();
  }
  while (!all_done()) {
    std::vector<TokenEvent> evs = s.queue->wait(heartbeat);
    out.clear();
    {
      std::lock_guard<std::mutex> lk(s.ticket->mu);
      if (!s.ticket->error.empty()) {  // a lane submission that the engine refused
        for (auto& x : s.samples) x.finish_abort();
      }
    }
    for (const TokenEvent& ev : evs) {
      if (ev.index < 0 || ev.index >= static_cast<int>(s.samples.size())) continue;
      if (ev.has_token || ev.finished) s.slot.release();
      if (ev.has_token) {
        s.last_token = Clock::now();
        if (!s.got_first) {
          s.got_first = true;
          s.first_token = s.last_token;
          s.cached_tokens = ev.cached_prompt_tokens;
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
        if (!delta.empty() || !recs.empty() || so.done())
          out += sse(stream_chunk(s.meta, ev.index, delta, &recs, so.done() ? so.finish_reason() : "", false));
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
    if (!out.empty()) {
      if (!write(out)) return gone();
      last_write = Clock::now();
    }
  }
  // Samples ended by a stop string (or an abort) may still be running in the engine.
  bool engine_done = true;
  for (bool f : s.engine_finished) engine_done = engine_done && f;
  if (!engine_done)
    ctx.driver.cancel(s.ticket, s.long_lane);
  else if (s.long_lane)
    ctx.driver.release_long(s.ticket);
  s.completed = true;

  Usage u;
  u.prompt_tokens = static_cast<int>(s.prompt.size());
  u.cached_tokens = s.cached_tokens;
  for (const auto& x : s.samples) u.completion_tokens += x.completion_tokens();
  if (stream) {
    out.clear();
    if (s.req.include_usage) out += sse(usage_chunk(s.meta, u));
    out += "data: [DONE]\n\n";
  } else {
    out = dump(full_response(s.meta, s.samples, u, s.warnings));
  }
  bool ok = write(out);
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

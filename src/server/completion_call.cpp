// The request lifecycle: body -> CompletionRequest -> prompt tokens -> GenerationRequest (engine) ->
// events (engine thread) -> EventQueue -> SampleOutput per choice -> SSE chunks or one JSON body.
// The engine thread only appends to the queue; detokenizing, stop matching and aborts happen here.
#include "server/completion_call.h"

#include <algorithm>
#include <condition_variable>
#include <nlohmann/json.hpp>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "tinfer/error.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/routed_request.h"
#include "server/sse_keepalive.h"
#include "text/tool_calls/reasoning.h"

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
  // While the relay is blocked writing to a slow client the engine keeps producing: the queue holds at most
  // `cap` bytes (an event weighs about what it renders to), then drops events and reports the overflow, which
  // cuts the stream (StreamBacklog). Streams only; a whole response is drained as it is produced.
  int64_t cap = std::numeric_limits<int64_t>::max();
  int64_t weight = 0;
  bool overflowed = false;

  static int64_t weight_of(const TokenEvent& e) { return 64 * (1 + static_cast<int64_t>(e.top_logprobs.size())); }
  void push(const TokenEvent& e, int attempt) {
    {
      std::lock_guard<std::mutex> lk(mu);
      weight += weight_of(e);
      if (weight > cap)
        overflowed = true;
      else
        events.push_back({e, attempt});
    }
    cv.notify_one();
  }
  // The events so far; `overflow` says whether some were dropped.
  std::vector<QueuedEvent> wait(std::chrono::milliseconds timeout, bool& overflow) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait_for(lk, timeout, [&] { return !events.empty() || overflowed; });
    overflow = overflowed;
    weight = 0;
    return std::exchange(events, {});
  }
};

// Thrown when a stream's client reads slower than the engine writes past the backlog bounds.
struct SlowReader : std::runtime_error {
  SlowReader() : std::runtime_error("the client reads slower than the stream is produced") {}
};

// A stream's bytes made but not yet taken by the client, sent a slice at a time so that the producer side
// (events -> chunks) runs between slices and the backlog is measured, and bounded, while a slow client reads:
// at most max_stream_backlog_bytes for the stream, and max_streams_backlog_bytes for all streams together
// (then a stream holding more than 1 MiB is cut). Shapes: pending_[off_, size) unsent; slices of kSlice.
class StreamBacklog {
 public:
  static constexpr size_t kSlice = 16 << 10;  // a slice's write blocks at most one send-stall per slice of no progress
  explicit StreamBacklog(ServerContext& ctx) : ctx_(ctx) {}
  ~StreamBacklog() { ctx_.metrics.stream_backlog_bytes -= held(); }
  bool empty() const { return off_ == pending_.size(); }
  // Appends bytes to send; false when the bounds are passed.
  bool add(const std::string& bytes) {
    if (bytes.empty()) return true;
    if (off_ > kSlice * 4) pending_.erase(0, off_), off_ = 0;  // keep the buffer from growing at the front
    pending_ += bytes;
    const int64_t total = ctx_.metrics.stream_backlog_bytes += static_cast<int64_t>(bytes.size());
    return held() <= ctx_.config.max_stream_backlog_bytes &&
           (total <= ctx_.config.max_streams_backlog_bytes || held() <= (int64_t{1} << 20));
  }
  std::string_view next_slice() const { return std::string_view(pending_).substr(off_, kSlice); }
  void sent(size_t n) {  // n: the size of the slice just written
    off_ += n;
    ctx_.metrics.stream_backlog_bytes -= static_cast<int64_t>(n);
    if (empty()) pending_.clear(), off_ = 0;
  }

 private:
  int64_t held() const { return static_cast<int64_t>(pending_.size() - off_); }
  ServerContext& ctx_;
  std::string pending_;
  size_t off_ = 0;
};

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

  // start()'s steps.
  void compile_grammar();
  PromptCall make_prompt(size_t p);
  void add_warnings(const std::vector<std::string>& ws);
  void check_response_size() const;
  void make_meta();
  void make_samples();
  void submit_all();
  // run()'s steps.
  bool all_done() const;
  PromptCall& prompt_of(size_t choice) { return prompts[choice / static_cast<size_t>(req.n)]; }
  std::string opening_chunks();
  bool relay_events(const WriteFn& write, const PeerGoneFn& peer_gone, SseKeepalive& keepalive);
  void on_event(const QueuedEvent& qe, std::string& out);
  std::string chunk_of(int index, const std::string& text, std::vector<TokenRecord>* recs, const std::string& reason,
                       const std::string& model);
  void note_token(PromptCall& pc, const TokenEvent& ev);
  void abort_if_past_deadline(std::string& out);
  Usage finish_engine_requests();
  void attach_routes();
  bool write_tail(const WriteFn& write, const Usage& u);
  void observe_end(bool ok);

  ServerContext& ctx;
  CompletionRequest req;
  std::shared_ptr<const TokenGrammar> grammar;  // req.format compiled (shared by every prompt and sample)
  std::vector<PromptCall> prompts;
  std::vector<std::string> warnings;
  ResponseMeta meta;
  std::shared_ptr<EventQueue> queue = std::make_shared<EventQueue>();
  std::vector<SampleOutput> samples;  // [prompts x n]
  std::vector<std::unique_ptr<ChoiceShaper>> shapers;  // [prompts x n] chat: tool calls / reasoning, else empty
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

// The chat messages rendered by the model's template and encoded.
std::vector<int32_t> encode_messages(const ServerContext& ctx, const CompletionRequest& req) {
  const Tokenizer& tok = ctx.tokenizer;
  ChatOptions co;
  co.tools_json = req.tools_json;
  try {
    return encode_chat(tok, ctx.chat_template, req.messages, co, tok.add_bos_by_default() && tok.bos() >= 0);
  } catch (const Error& e) {  // the template refused these messages (raise_exception, a type error...)
    throw ApiError(400, std::string("the chat template cannot render these messages: ") + e.what(), "messages",
                   "invalid_value");
  }
}

// The engine request of one prompt: the request's sampling and limits around its tokens.
GenerationRequest generation_request(const CompletionRequest& req, const std::vector<int32_t>& prompt,
                                     std::shared_ptr<const TokenGrammar> grammar) {
  GenerationRequest gr;
  gr.grammar = std::move(grammar);
  gr.prompt = prompt;
  gr.sampling = req.sampling;
  gr.max_tokens = req.max_tokens;
  gr.ignore_eos = req.ignore_eos;
  gr.stop_token_ids = req.stop_token_ids;
  gr.n = req.n;
  gr.speculative = req.speculative;
  gr.use_beam_search = req.use_beam_search;
  gr.length_penalty = req.length_penalty;
  gr.early_stopping = req.early_stopping;
  return gr;
}

}  // namespace

// The request's output format as a grammar, compiled on this HTTP thread (the engine's step loop never waits
// for a compile; a cached grammar is a lookup). What cannot compile is a 400 naming the field it came from.
// tool_choice "required" or a named function is a structural tag of the model's call format; with a reasoning
// model the format applies after its <think> block.
void CompletionCall::State::compile_grammar() {
  std::optional<OutputFormat> f = req.format;
  if (req.tools.enforce()) {
    const char* field = req.tools.legacy ? "function_call" : "tool_choice";
    if (f)
      throw ApiError(400, "'" + f->field + "' cannot be combined with a forced tool call ('" + field + "')", f->field,
                     "invalid_value");
    std::string tag = ctx.tool_format->structural_tag_text(req.tools.grammar_tools_json, req.tools.choice);  // key order kept
    if (tag.empty())
      throw ApiError(400, std::string("'") + field + "' cannot be enforced in the " + ctx.tool_format->name + " format",
                     field, "invalid_value");
    f = OutputFormat{{grammar::GrammarKind::kStructuralTag, std::move(tag)}, field};
  }
  if (!f) return;
  const auto t0 = Clock::now();
  try {
    if (ctx.reasoning && req.chat)
      f->spec = {grammar::GrammarKind::kStructuralTag,
                 toolcall::reasoning_then(nlohmann::json::parse(grammar::as_structural_format(f->spec)),
                                          ctx.opens_reasoning)};
    grammar = ctx.grammars->compile(f->spec);
  } catch (const grammar::GrammarError& e) {
    throw ApiError(400, "'" + f->field + "' cannot be followed: " + e.what(), f->field, "invalid_grammar");
  } catch (const nlohmann::json::exception& e) {
    throw ApiError(400, "'" + f->field + "' cannot be followed: " + e.what(), f->field, "invalid_grammar");
  }
  ctx.metrics.grammar_wait.observe(std::chrono::duration<double>(Clock::now() - t0).count());
  ++ctx.metrics.requests_constrained;
}

// Prompt p encoded (its echo kept), and resolved by the engine its route picks.
PromptCall CompletionCall::State::make_prompt(size_t p) {
  const Tokenizer& tok = ctx.tokenizer;
  const bool chat = req.chat;
  const size_t n_prompts = chat ? 1 : req.prompts.size();
  PromptCall pc;
  const std::string pname = chat ? "messages" : n_prompts > 1 ? "prompt[" + std::to_string(p) + "]" : "prompt";
  if (chat) {
    pc.prompt = encode_messages(ctx, req);
  } else {
    pc.prompt = encode_prompt(tok, req.prompts[p]);
    if (req.echo) pc.echo = req.prompts[p].is_ids ? tok.decode(req.prompts[p].ids) : req.prompts[p].text;
  }
  if (pc.prompt.empty()) throw ApiError(400, "'" + pname + "' encodes to no tokens", pname, "invalid_value");
  // The engine resolves the request once (max_tokens default/cap/context room, n, stop ids, priority);
  // the server only maps its RequestError to a 400 naming the field.
  try {  // the model name (404 when unknown) and the route pick the engine; that engine resolves
    pc.engine = std::make_unique<RoutedRequest>(ctx, req.model, generation_request(req, pc.prompt, grammar));
  } catch (const RequestError& e) {
    throw ApiError(400, e.what(), e.field() == "prompt" ? pname : e.field(), e.code());
  }
  return pc;
}

void CompletionCall::State::add_warnings(const std::vector<std::string>& ws) {
  for (const std::string& w : ws)  // each said once, however many prompts it applies to
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
}

// A whole response is built in memory: bound its entries (tokens and top-logprob alternatives).
void CompletionCall::State::check_response_size() const {
  if (req.stream) return;
  const int64_t per_token = req.sampling.logprobs ? 1 + req.sampling.top_logprobs : 1;
  int64_t entries = 0;
  for (const auto& pc : prompts) entries += int64_t{req.n} * pc.engine->resolved().max_tokens * per_token;
  if (entries > ctx.config.max_response_entries)
    throw ApiError(400,
                   "the response would hold up to " + std::to_string(entries) +
                       " token entries (prompts x n x max_tokens x (1 + top logprobs)), above this server's "
                       "limit of " + std::to_string(ctx.config.max_response_entries) +
                       "; lower 'n', 'max_tokens' or the logprobs count, or use 'stream': true",
                   "max_tokens", "response_too_large");
}

void CompletionCall::State::make_meta() {
  meta = {ctx.response_ids.next(req.chat ? "chatcmpl-" : "cmpl-"),
          static_cast<int64_t>(
              std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                  .count()),
          prompts.front().engine->model_id(), req.chat, req.sampling.logprobs};
}

void CompletionCall::State::make_samples() {
  for (const auto& pc : prompts) {
    const bool at_text_start = prompt_is_bos_only(ctx.tokenizer, pc.prompt);
    for (int i = 0; i < req.n; ++i) samples.emplace_back(ctx.tokenizer, req.stop, req.sampling.logprobs, at_text_start);
  }
  engine_finished.assign(samples.size(), false);
  if (req.chat && (req.tools.parse() || ctx.reasoning))
    for (size_t i = 0; i < samples.size(); ++i)
      shapers.push_back(std::make_unique<ChoiceShaper>(req.tools.parse() ? ctx.tool_format : nullptr, ctx.reasoning,
                                                       ctx.opens_reasoning, req.tools.tools_json, req.tools.legacy));
}

// A sample's new text through its shaper (when it has one) into a stream chunk; done: the last one.
std::string CompletionCall::State::chunk_of(int index, const std::string& text, std::vector<TokenRecord>* recs,
                                            const std::string& reason, const std::string& model) {
  ResponseMeta m = meta;
  if (!model.empty()) m.model = model;  // each chunk names the model that produced it
  if (shapers.empty()) {
    if (text.empty() && (!recs || recs->empty()) && reason.empty()) return "";
    return req.stream ? sse(stream_chunk(m, index, text, recs, reason, false)) : "";
  }
  ChoiceShaper& sh = *shapers[size_t(index)];
  toolcall::ParseDelta d = sh.push(text);
  if (!reason.empty()) d.append(sh.finish());
  if (!req.stream || (d.empty() && (!recs || recs->empty()) && reason.empty())) return "";
  return sse(shaped_chunk(m, index, d, recs, reason.empty() ? "" : sh.finish_reason(reason), sh.legacy()));
}

void CompletionCall::State::submit_all() {
  std::shared_ptr<EventQueue> q = queue;
  for (size_t p = 0; p < prompts.size(); ++p) {
    PromptCall& pc = prompts[p];
    const int base = static_cast<int>(p) * req.n;  // this prompt's first choice index
    pc.engine->submit([q, base](const TokenEvent& e, int attempt) {
      TokenEvent c = e;
      c.index += base;
      q->push(c, attempt);
    });
  }
}

std::unique_ptr<CompletionCall> CompletionCall::start(ServerContext& ctx, const nlohmann::json& body, bool chat,
                                                      std::string_view raw_body) {
  if (ctx.draining) throw ApiError(503, "the server is shutting down", "", "shutting_down", "service_unavailable");
  CompletionRequest req = parse_completion_request(body, chat, raw_body);
  try {  // before the template is rendered or the text tokenized: what cannot fit costs nothing more
    refuse_unfit_prompts(ctx.floor, ctx.floor_max_len, req, body);
  } catch (const ApiError&) {
    ctx.metrics.rejected_prompt_floor++;
    throw;
  }
  auto s = std::make_unique<State>(ctx);
  s->req = std::move(req);
  if (s->req.stream) s->queue->cap = ctx.config.max_stream_backlog_bytes;
  s->compile_grammar();
  const size_t n_prompts = chat ? 1 : s->req.prompts.size();
  for (size_t p = 0; p < n_prompts; ++p) {
    PromptCall pc = s->make_prompt(p);
    s->add_warnings(pc.engine->resolved().warnings);
    s->prompts.push_back(std::move(pc));
  }
  s->check_response_size();
  for (auto& pc : s->prompts) pc.slot = std::make_unique<QueueSlot>(ctx);  // 429 when the queue is full
  s->make_meta();
  s->make_samples();
  s->submit_all();
  return std::unique_ptr<CompletionCall>(new CompletionCall(std::move(s)));
}

bool CompletionCall::State::all_done() const {
  for (const auto& x : samples)
    if (!x.done()) return false;
  return true;
}

// Streams open with the chat role, or with the echoed prompt (as vLLM does), for every choice.
std::string CompletionCall::State::opening_chunks() {
  std::string out;
  for (size_t i = 0; i < samples.size(); ++i)
    out += sse(stream_chunk(meta, static_cast<int>(i), prompt_of(i).echo, nullptr, "", meta.chat));
  return out;
}

// Events -> chunks until every sample is done; false when the client is gone. Nothing but events goes out:
// every probe period the socket is asked, writing nothing, whether the client left (a stream still waiting for
// its first token and a whole response being generated are cancelled as promptly as a stream whose write fails).
// The one other thing a stream may carry is the --sse-keepalive comment, and only after its first data event.
bool CompletionCall::State::relay_events(const WriteFn& write, const PeerGoneFn& peer_gone, SseKeepalive& keepalive) {
  const auto probe = std::chrono::milliseconds(ctx.config.peer_probe_ms);
  Clock::time_point last_probe = Clock::now();
  StreamBacklog backlog(ctx);
  std::string out;
  while (!all_done() || !backlog.empty()) {
    // With bytes still to send, take what the engine made meanwhile without waiting for more.
    bool overflow = false;
    std::vector<QueuedEvent> evs = queue->wait(backlog.empty() ? probe : std::chrono::milliseconds(0), overflow);
    out.clear();
    std::optional<NsTimer> respond_timer(std::in_place, ctx.metrics.http_respond_ns);  // event handling, chunks
    for (const QueuedEvent& qe : evs) on_event(qe, out);
    abort_if_past_deadline(out);
    respond_timer.reset();  // (writes are timed as http_write)
    const Clock::time_point now = Clock::now();
    if (now - last_probe >= probe) {
      if (peer_gone && peer_gone()) return false;
      last_probe = now;
    }
    const bool data = !out.empty();
    if (!data && backlog.empty() && req.stream && !all_done() && keepalive.due(now)) out = ": keep-alive\n\n";
    const bool comment_only = !data && !out.empty();
    if (overflow || !backlog.add(out)) {
      ctx.metrics.slow_reader_aborts++;
      throw SlowReader();  // the HTTP layer ends the body incomplete and closes; ~State cancels the requests
    }
    if (!backlog.empty()) {
      const std::string_view slice = backlog.next_slice();
      if (!write(slice)) return false;
      backlog.sent(slice.size());
      keepalive.wrote(Clock::now(), !comment_only);
    }
  }
  return true;
}

// One engine event into its sample; a stream gets the chunk it makes.
void CompletionCall::State::on_event(const QueuedEvent& qe, std::string& out) {
  const TokenEvent& ev = qe.ev;
  if (ev.index < 0 || ev.index >= static_cast<int>(samples.size())) return;
  PromptCall& pc = prompt_of(static_cast<size_t>(ev.index));
  if (!pc.engine->filter(ev, qe.attempt)) return;  // an abandoned attempt's, or the route moved
  if (ev.has_token || ev.finished) pc.slot->release();
  if (ev.has_token) note_token(pc, ev);
  if (ev.finished) engine_finished[ev.index] = true;
  SampleOutput& so = samples[ev.index];
  bool was_done = so.done();
  std::string delta = so.on_event(ev);
  if (!was_done && so.stopped_by_string()) ctx.metrics.stop_string_hits++;
  if (!was_done) {
    auto recs = req.stream ? so.take_new_records() : std::vector<TokenRecord>{};
    out += chunk_of(ev.index, delta, &recs, so.done() ? so.finish_reason() : "", pc.engine->model_id());
  }
}

// Token timing: the prompt's first token (its cached prompt tokens), the request's (time to first token).
void CompletionCall::State::note_token(PromptCall& pc, const TokenEvent& ev) {
  last_token = Clock::now();
  if (!pc.got_first) {
    pc.got_first = true;
    pc.cached_tokens = ev.cached_prompt_tokens;
  }
  if (!got_first) {
    got_first = true;
    first_token = last_token;
    ctx.metrics.ttft.observe(std::chrono::duration<double>(first_token - arrival).count());
  }
}

// Shutdown past its grace: every running sample ends with finish_reason "abort".
void CompletionCall::State::abort_if_past_deadline(std::string& out) {
  if (!(ctx.draining && ctx.past_abort_deadline() && !all_done())) return;
  ctx.metrics.server_aborts++;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].done()) continue;
    std::string delta = samples[i].finish_abort();
    auto recs = req.stream ? samples[i].take_new_records() : std::vector<TokenRecord>{};
    out += chunk_of(static_cast<int>(i), delta, &recs, "abort", "");
  }
}

// Samples ended by a stop string (or an abort) may still be running in the engine: cancelled. Returns the usage.
Usage CompletionCall::State::finish_engine_requests() {
  const int n = req.n;
  Usage u;
  for (size_t p = 0; p < prompts.size(); ++p) {
    PromptCall& pc = prompts[p];
    bool engine_done = true;
    for (int j = 0; j < n; ++j) engine_done = engine_done && engine_finished[p * n + j];
    if (!engine_done) pc.engine->cancel();
    u.prompt_tokens += static_cast<int>(pc.prompt.size());
    u.cached_tokens += pc.cached_tokens;
  }
  completed = true;
  for (const auto& x : samples) u.completion_tokens += x.completion_tokens();
  return u;
}

// Routing: the answering model (the first prompt's, when a list of prompts went to different ones) and, per
// prompt, how it was routed (the non-standard "tinfer_route"; streams carry it in the usage chunk).
void CompletionCall::State::attach_routes() {
  meta.model = prompts.front().engine->model_id();
  if (!ctx.route) return;
  nlohmann::json routes = nlohmann::json::array();
  for (const PromptCall& pc : prompts) routes.push_back(route_json(pc.engine->outcome(), pc.engine->model_id()));
  meta.extra["tinfer_route"] = std::move(routes);
  // Counted and logged before the last bytes go out, so a client that reads /metrics right after its answer sees
  // this request (report() runs once; ~State reports the requests that end any other way).
  for (size_t p = 0; p < prompts.size(); ++p) prompts[p].engine->report(meta.id, static_cast<int>(p));
}

// A stream's usage chunk and [DONE], or the whole response (a choice at a time).
bool CompletionCall::State::write_tail(const WriteFn& write, const Usage& u) {
  if (req.stream) {
    std::string out;
    if (req.include_usage) out += sse(usage_chunk(meta, u));
    out += "data: [DONE]\n\n";
    return write(out);
  }
  std::vector<std::string> echo;
  if (req.echo)
    for (size_t i = 0; i < samples.size(); ++i) echo.push_back(prompt_of(i).echo);
  return write_full_response(meta, samples, echo, u, warnings, write, &shapers);
}

void CompletionCall::State::observe_end(bool ok) {
  auto end = Clock::now();
  ctx.metrics.e2e.observe(std::chrono::duration<double>(end - arrival).count());
  int n_out = samples.empty() ? 0 : samples[0].completion_tokens();
  if (got_first && n_out > 1)
    ctx.metrics.tpot.observe(std::chrono::duration<double>(last_token - first_token).count() / (n_out - 1));
  if (ok)
    ctx.metrics.requests_ok++;
  else
    ctx.metrics.client_disconnects++;
}

void CompletionCall::run(const WriteFn& write, const PeerGoneFn& peer_gone) {
  State& s = *s_;
  // A client gone mid-response: ~State cancels every submitted engine request (the engine frees the KV blocks
  // at its next step).
  auto gone = [&] { s.ctx.metrics.client_disconnects++; };
  SseKeepalive keepalive(s.req.stream ? s.ctx.config.sse_keepalive_s : 0);
  if (s.req.stream && (s.meta.chat || s.req.echo)) {  // data events (the role, the echo): a stream may begin so
    if (!write(s.opening_chunks())) return gone();
    keepalive.wrote(Clock::now(), true);
  }
  if (!s.relay_events(write, peer_gone, keepalive)) return gone();
  const Usage u = s.finish_engine_requests();
  s.attach_routes();
  s.observe_end(s.write_tail(write, u));
}

}  // namespace tinfer::server

// Prometheus exposition (text format 0.0.4); names follow vLLM's where one exists (tinfer: prefix).
#include "server/metrics.h"

#include <algorithm>
#include <cstdio>

namespace tinfer::server {

namespace {
std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}
void gauge(std::string& out, const char* name, const char* type, const char* help, double v) {
  out +=
      std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + num(v) + "\n";
}

// The counters measured at the HTTP edge, in page order.
struct EdgeCounter {
  const char* name;
  const char* help;
  std::atomic<int64_t> Metrics::*value;
};
const EdgeCounter kEdgeCounters[] = {
    {"tinfer:request_success_total", "Requests answered 200.", &Metrics::requests_ok},
    {"tinfer:request_error_total", "Requests answered 4xx/5xx (rejections included).", &Metrics::requests_error},
    {"tinfer:request_rejected_queue_full_total", "Requests answered 429 (queue full).", &Metrics::rejected_queue},
    {"tinfer:request_rejected_body_too_large_total", "Requests answered 413.", &Metrics::rejected_body},
    {"tinfer:request_rejected_preprocess_busy_total",
     "Requests answered 429 because every preprocessing slot stayed busy for the wait.", &Metrics::rejected_preprocess},
    {"tinfer:request_rejected_prompt_floor_total",
     "Requests answered 400 for context length from their byte length or message count, before tokenizing.",
     &Metrics::rejected_prompt_floor},
    {"tinfer:memory_trims_total", "Times freed heap memory was handed back to the OS after large requests.",
     &Metrics::memory_trims},
    {"tinfer:client_disconnects_total", "Requests aborted because their client went away.",
     &Metrics::client_disconnects},
    {"tinfer:shutdown_aborts_total", "Requests aborted by a shutdown.", &Metrics::server_aborts},
    {"tinfer:slow_reader_aborts_total",
     "Streams cut because their client read slower than they were produced and the unsent bytes passed a bound.",
     &Metrics::slow_reader_aborts},
    {"tinfer:stop_string_hits_total", "Samples ended by a stop string.", &Metrics::stop_string_hits},
};
}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  std::lock_guard<std::mutex> lk(mu_);
  counts_[i]++;
  sum_ += v;
  n_++;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  std::lock_guard<std::mutex> lk(mu_);
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(n_) + "\n";
  out += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(n_) + "\n";
}

Metrics::Metrics()
    : ttft({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
      tpot({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}),
      e2e({0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120}),
      grammar_wait({0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}) {}

std::string Metrics::render(const EngineStats& s, int queued, bool ready, const OpProfile& ops) const {
  std::string o;
  gauge(o, "tinfer:ready", "gauge", "1 once the model is loaded and a warm-up step has run.", ready ? 1 : 0);
  gauge(o, "tinfer:num_requests_running", "gauge", "Requests in the engine's running batch.", s.running);
  gauge(o, "tinfer:num_requests_waiting", "gauge", "Requests waiting in the engine's queue.", s.waiting);
  gauge(o, "tinfer:num_requests_queued_server", "gauge",
        "Requests accepted by the server that have not produced a token yet (bounded by --max-queued-requests).",
        queued);
  gauge(o, "tinfer:num_requests_long_lane", "gauge", "Background-class (long) requests waiting for admission.",
        static_cast<double>(long_lane_waiting.load()));
  gauge(o, "tinfer:num_requests_preprocessing", "gauge",
        "Requests being parsed, templated and tokenized (bounded by --max-preprocessing).",
        static_cast<double>(preprocess_active.load()));
  gauge(o, "tinfer:num_requests_preprocess_waiting", "gauge", "Requests waiting for a preprocessing slot.",
        static_cast<double>(preprocess_waiting.load()));
  gauge(o, "tinfer:kv_blocks_used", "gauge", "KV-cache blocks in use.", s.kv_blocks_used);
  gauge(o, "tinfer:kv_blocks_total", "gauge", "KV-cache blocks in the pool.", s.kv_blocks_total);
  gauge(o, "tinfer:kv_blocks_touched", "gauge",
        "KV-cache blocks ever handed out (resident in memory): the running peak with --kv-reuse resident.",
        s.kv_blocks_touched);
  if (s.kv_window_blocks_total > 0) {  // the sliding-window layers' own pool (kvcache/kv_cache_groups.h)
    gauge(o, "tinfer:kv_window_blocks_used", "gauge", "Sliding-window layers' KV blocks in use.", s.kv_window_blocks_used);
    gauge(o, "tinfer:kv_window_blocks_total", "gauge", "Sliding-window layers' KV blocks in their pool.",
          s.kv_window_blocks_total);
  }
  gauge(o, "tinfer:kv_bytes_per_token", "gauge", "KV-cache bytes one token takes, every layer, scales included.",
        static_cast<double>(s.kv_bytes_per_token));
  o += "# HELP tinfer:kv_cache_info The KV cache's element types (f32, f16, int8, int4; per layer when mixed).\n"
       "# TYPE tinfer:kv_cache_info gauge\ntinfer:kv_cache_info{types=\"" + s.kv_types + "\"} 1\n";
  gauge(o, "tinfer:kv_cache_usage_perc", "gauge", "Fraction of KV-cache blocks in use.",
        s.kv_blocks_total ? static_cast<double>(s.kv_blocks_used) / s.kv_blocks_total : 0.0);
  gauge(o, "tinfer:prefix_cache_hit_rate", "gauge", "Prefix-cache hit tokens / looked-up tokens.", s.prefix_hit_rate);
  gauge(o, "tinfer:prompt_tokens_total", "counter", "Prompt tokens processed.", static_cast<double>(s.prompt_tokens));
  gauge(o, "tinfer:generation_tokens_total", "counter", "Tokens generated.", static_cast<double>(s.generated_tokens));
  gauge(o, "tinfer:num_preemptions_total", "counter", "Requests preempted by the scheduler.",
        static_cast<double>(s.preemptions));
  o += "# HELP tinfer:spec_decode_info Speculative decoding mode (none, ngram, draft, self).\n"
       "# TYPE tinfer:spec_decode_info gauge\ntinfer:spec_decode_info{mode=\"" + s.spec_mode + "\"} 1\n";
  gauge(o, "tinfer:spec_decode_num_draft_tokens_total", "counter", "Draft tokens verified by the target.",
        static_cast<double>(s.spec_drafted));
  gauge(o, "tinfer:spec_decode_num_accepted_tokens_total", "counter", "Draft tokens the target kept.",
        static_cast<double>(s.spec_accepted));
  gauge(o, "tinfer:spec_decode_verify_steps_total", "counter", "Decode steps of a request that carried drafts.",
        static_cast<double>(s.spec_steps));
  gauge(o, "tinfer:spec_decode_draft_acceptance_rate", "gauge", "Accepted / drafted tokens so far.",
        s.spec_acceptance());
  gauge(o, "tinfer:early_exit_rows_total", "counter", "Decode rows that could exit early (--early-exit).",
        static_cast<double>(s.early_exit_eligible));
  gauge(o, "tinfer:early_exit_exited_total", "counter", "Decode rows that left the step at an exit layer.",
        static_cast<double>(s.early_exit_exited));
  gauge(o, "tinfer:engine_aborts_total", "counter", "Requests aborted in the engine.", static_cast<double>(s.aborts));
  gauge(o, "tinfer:engine_steps_total", "counter", "Engine iterations.", static_cast<double>(s.steps));
  for (const EdgeCounter& c : kEdgeCounters)
    gauge(o, c.name, "counter", c.help, static_cast<double>((this->*c.value).load()));
  ttft.render(o, "tinfer:time_to_first_token_seconds", "Time from request arrival to its first token.");
  tpot.render(o, "tinfer:time_per_output_token_seconds", "Mean gap between output tokens of a request.");
  e2e.render(o, "tinfer:e2e_request_latency_seconds", "Time from request arrival to its last byte.");
  o += "# HELP tinfer_op_seconds_total Engine time by operator category (always-on per-step timers).\n"
        "# TYPE tinfer_op_seconds_total counter\n";
  for (int i = 0; i < kNumOps; ++i)
    o += std::string("tinfer_op_seconds_total{op=\"") + op_name(static_cast<Op>(i)) + "\"} " +
         num(ops[static_cast<Op>(i)].seconds) + "\n";
  const std::pair<const char*, int64_t> http[] = {{"http_request", http_request_ns.load()},
                                                  {"http_respond", http_respond_ns.load()},
                                                  {"http_write", http_write_ns.load()}};
  for (const auto& [name, ns] : http)
    o += std::string("tinfer_op_seconds_total{op=\"") + name + "\"} " + num(double(ns) * 1e-9) + "\n";
  return o;
}

void Metrics::render_routing(std::string& o, const std::string& policy, const std::vector<std::string>& ids,
                             const std::vector<EngineStats>& stats) const {
  o += "# HELP tinfer:route_info Routing between models: the policy.\n# TYPE tinfer:route_info gauge\n"
       "tinfer:route_info{policy=\"" +
       policy + "\"} 1\n";
  o += "# HELP tinfer:route_requests_total Prompts answered by each model (after any move to the large one).\n"
       "# TYPE tinfer:route_requests_total counter\n";
  for (size_t i = 0; i < ids.size() && i < route_answered.size(); ++i)
    o += "tinfer:route_requests_total{model=\"" + ids[i] + "\"} " + std::to_string(route_answered[i].load()) + "\n";
  gauge(o, "tinfer:route_automatic_total", "counter", "Prompts routed automatically (measured on the small model).",
        static_cast<double>(route_automatic.load()));
  gauge(o, "tinfer:route_escalations_total", "counter",
        "Prompts the small model handed to the large one during generation.",
        static_cast<double>(route_escalations.load()));
  const std::pair<const char*, int64_t EngineStats::*> per_model[] = {
      {"prompt_tokens_total", &EngineStats::prompt_tokens},
      {"generation_tokens_total", &EngineStats::generated_tokens}};
  for (const auto& [name, field] : per_model) {
    o += std::string("# HELP tinfer:route_") + name + " Per model: the engine's " + name + ".\n# TYPE tinfer:route_" +
         name + " counter\n";
    for (size_t i = 0; i < ids.size() && i < stats.size(); ++i)
      o += std::string("tinfer:route_") + name + "{model=\"" + ids[i] + "\"} " + std::to_string(stats[i].*field) + "\n";
  }
}

}  // namespace tinfer::server

namespace tinfer::server {

void Metrics::render_grammar(std::string& o, const grammar::GrammarStats& g, int64_t jump_forward_tokens) const {
  gauge(o, "tinfer:grammar_compiles_total", "counter", "Structured-output grammars compiled (cache misses).",
        static_cast<double>(g.compiles));
  gauge(o, "tinfer:grammar_compile_failures_total", "counter", "Grammars refused (400).", static_cast<double>(g.failures));
  gauge(o, "tinfer:grammar_cache_hits_total", "counter", "Grammar requests answered from the cache.",
        static_cast<double>(g.cache_hits));
  gauge(o, "tinfer:grammar_compile_seconds_total", "counter", "Wall time spent compiling grammars.", g.compile_seconds);
  gauge(o, "tinfer:grammar_cache_bytes", "gauge", "Bytes held by cached compiled grammars.",
        static_cast<double>(g.cache_bytes));
  gauge(o, "tinfer:grammar_jump_forward_tokens_total", "counter",
        "Tokens a grammar forced, committed without a forward of their own (jump-forward).",
        static_cast<double>(jump_forward_tokens));
  gauge(o, "tinfer:requests_constrained_total", "counter", "Requests with structured output (a grammar).",
        static_cast<double>(requests_constrained.load()));
  grammar_wait.render(o, "tinfer:grammar_wait_seconds", "Time a constrained request waited for its grammar.");
}

}  // namespace tinfer::server

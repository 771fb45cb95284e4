// Server metrics in Prometheus text format: request latency histograms (TTFT, time per output token,
// end to end) and counters measured at the HTTP edge, plus a snapshot of the engine's own stats.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "grammar/grammar_compiler.h"
#include "tinfer/engine.h"

namespace tinfer::server {

// Fixed-bucket histogram (seconds); observe() takes a lock (a handful of calls per request).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative); last = +Inf
  double sum_ = 0;
  uint64_t n_ = 0;
};

// Adds the lifetime of a scope to a nanosecond counter (any thread).
class NsTimer {
 public:
  explicit NsTimer(std::atomic<int64_t>& sink) : sink_(sink), t0_(std::chrono::steady_clock::now()) {}
  ~NsTimer() {
    sink_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
  }
  NsTimer(const NsTimer&) = delete;
  NsTimer& operator=(const NsTimer&) = delete;

 private:
  std::atomic<int64_t>& sink_;
  std::chrono::steady_clock::time_point t0_;
};

class Metrics {
 public:
  Metrics();
  Histogram ttft, tpot, e2e;
  // Structured output: how long each constrained request waited for its grammar (a cache hit: ~0), and how many.
  Histogram grammar_wait;
  std::atomic<int64_t> requests_constrained{0};
  std::atomic<int64_t> requests_ok{0}, requests_error{0}, rejected_queue{0}, rejected_body{0};
  std::atomic<int64_t> client_disconnects{0}, server_aborts{0}, stop_string_hits{0};
  // Streams cut because their client read slower than they were produced, past the backlog bounds
  // (ServerConfig::max_stream_backlog_bytes), and the bytes all streams hold unsent now (a gauge).
  std::atomic<int64_t> slow_reader_aborts{0}, stream_backlog_bytes{0};
  std::atomic<int64_t> long_lane_waiting{0};
  // Preprocessing (server/preprocess_pool.h): requests in it and waiting for it (gauges), refused after the wait,
  // refused by their prompt floor (server/prompt_floor.h), and heap trims after bursts (server/memory_trim.h).
  std::atomic<int64_t> preprocess_active{0}, preprocess_waiting{0}, rejected_preprocess{0};
  std::atomic<int64_t> rejected_prompt_floor{0}, memory_trims{0};
  // Routing between models: prompts answered per model (index kLargeModel / kSmallModel, after any move), of which
  // routed automatically, and escalated from the small model to the large one during generation.
  std::array<std::atomic<int64_t>, 2> route_answered{};
  std::atomic<int64_t> route_automatic{0}, route_escalations{0};
  // Server-side time by category, summed over HTTP worker threads (nanoseconds): a request's JSON parse,
  // validation, tokenization and submission; turning engine events into text and SSE/JSON chunks; socket
  // writes. Exported with the engine's categories as tinfer_op_seconds_total{op="http_*"}.
  std::atomic<int64_t> http_request_ns{0}, http_respond_ns{0}, http_write_ns{0};

  // The whole /metrics page. queued = server-side requests not yet producing tokens.
  // ops: the engine's time by operator category (tinfer_op_seconds_total{op="..."}).
  std::string render(const EngineStats& s, int queued, bool ready, const OpProfile& ops = {}) const;
  // The routing lines, appended to a page: counters above and each model's own engine counters, labelled by id.
  // ids[i] and stats[i]: model i (kLargeModel, kSmallModel).
  // The grammar compiler's lines (compiles, failures, cache hits and bytes, compile seconds) and the ones above.
  // jump_forward_tokens: EngineStats::grammar_jump_forward_tokens.
  void render_grammar(std::string& out, const grammar::GrammarStats& g, int64_t jump_forward_tokens) const;
  void render_routing(std::string& out, const std::string& policy, const std::vector<std::string>& ids,
                      const std::vector<EngineStats>& stats) const;
};

}  // namespace tinfer::server

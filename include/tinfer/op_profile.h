// OpProfile: always-on time accounting by operator category. Timers wrap whole operations (one GEMM, one
// attention call, one step's sampling), never elements: a TinyLlama decode step takes ~250 of them, ~20 ns
// each, against a 25 ms step. Each category also accumulates the bytes it streamed and the operations it
// did, so a report can set its achieved GB/s or GOP/s against the measured roofline. Optionally records a
// Chrome trace-event timeline (bounded) for `--trace FILE`.
#pragma once
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tinfer {

// The categories, in step order. Names are table rows (op_profile.cpp); /metrics and reports use them.
enum class Op : uint8_t {
  kEmbed,
  kNorm,          // RMSNorm (attention, FFN, output)
  kActQuant,      // activations quantized to int8 for the integer GEMMs
  kMatmulQkv,
  kRopeKv,        // RoPE + K/V written into their blocks
  kAttention,
  kMatmulOut,     // attention output projection
  kResidual,      // residual adds
  kMatmulGateUp,
  kActivation,    // SwiGLU
  kMatmulDown,
  kLmHead,
  kExitHead,      // early exit: the final norm and the head at an exit layer (rows that may exit)
  kSample,        // engine: sampling, penalties, logprobs
  kSchedule,      // engine: scheduler plan + update, CoW copies
  kDraft,         // engine: speculative drafting (prompt lookup, or the whole draft model's forwards)
  kCount
};
constexpr int kNumOps = static_cast<int>(Op::kCount);

const char* op_name(Op op);

struct OpStat {
  double seconds = 0;
  int64_t calls = 0;
  double bytes = 0;  // bytes streamed (weights for GEMMs, K/V for attention)
  double ops = 0;    // multiply-adds x 2
};

struct TraceEvent {
  Op op;
  double start_s, dur_s;  // steady clock
};

class OpProfile {
 public:
  void add(Op op, double seconds, double bytes = 0, double ops = 0) {
    OpStat& s = stats_[static_cast<int>(op)];
    s.seconds += seconds, s.calls += 1, s.bytes += bytes, s.ops += ops;
  }
  const OpStat& operator[](Op op) const { return stats_[static_cast<int>(op)]; }
  double total_seconds() const;
  void reset() { stats_ = {}; }
  void merge(const OpProfile& o);
  OpProfile counters() const {  // the totals without the trace (cheap to copy)
    OpProfile c;
    c.stats_ = stats_;
    return c;
  }
  // Puts back totals taken by counters() (work that is accounted elsewhere, e.g. a self-draft's forward, which
  // the engine counts as drafting); the trace keeps its events.
  void restore_counters(const OpProfile& c) { stats_ = c.stats_; }

  // Trace: when enabled, every timed operation is also kept as an event (at most max_events).
  void enable_trace(size_t max_events) { trace_cap_ = max_events; }
  void record(Op op, double start_s, double dur_s) {
    if (trace_.size() < trace_cap_) trace_.push_back({op, start_s, dur_s});
  }
  bool tracing() const { return trace_cap_ > 0; }
  const std::vector<TraceEvent>& trace() const { return trace_; }

 private:
  std::array<OpStat, kNumOps> stats_{};
  std::vector<TraceEvent> trace_;
  size_t trace_cap_ = 0;
};

// Times one operation into a profile (nullptr: nothing).
class OpTimer {
 public:
  OpTimer(OpProfile* p, Op op, double bytes = 0, double ops = 0) : p_(p), op_(op), bytes_(bytes), ops_(ops) {
    if (p_) t0_ = std::chrono::steady_clock::now();
  }
  ~OpTimer() {
    if (!p_) return;
    const auto t1 = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(t1 - t0_).count();
    p_->add(op_, s, bytes_, ops_);
    if (p_->tracing()) p_->record(op_, std::chrono::duration<double>(t0_.time_since_epoch()).count(), s);
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  OpProfile* p_;
  Op op_;
  double bytes_, ops_;
  std::chrono::steady_clock::time_point t0_;
};

// Chrome trace-event JSON ({"traceEvents": [...]}, complete "X" events in microseconds), opens in Perfetto.
std::string trace_event_json(const OpProfile& p);

}  // namespace tinfer

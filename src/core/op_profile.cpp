// OpProfile: the category table, totals, merging, and the trace-event export.
#include "tinfer/op_profile.h"

#include <cstdio>

namespace tinfer {

namespace {

constexpr const char* kNames[kNumOps] = {
    "embed", "norm", "act_quant", "matmul_qkv", "rope_kv", "attention", "matmul_out", "residual",
    "matmul_gate_up", "activation", "matmul_down", "lm_head", "exit_head", "sample", "schedule",
    "draft",
};

}  // namespace

const char* op_name(Op op) { return kNames[static_cast<int>(op)]; }

double OpProfile::total_seconds() const {
  double t = 0;
  for (const OpStat& s : stats_) t += s.seconds;
  return t;
}

void OpProfile::merge(const OpProfile& o) {
  for (int i = 0; i < kNumOps; ++i) {
    stats_[i].seconds += o.stats_[i].seconds, stats_[i].calls += o.stats_[i].calls;
    stats_[i].bytes += o.stats_[i].bytes, stats_[i].ops += o.stats_[i].ops;
  }
}

std::string trace_event_json(const OpProfile& p) {
  std::string out = "{\"traceEvents\":[";
  const double origin = p.trace().empty() ? 0 : p.trace().front().start_s;
  char buf[160];
  bool first = true;
  for (const TraceEvent& e : p.trace()) {
    std::snprintf(buf, sizeof buf, "%s{\"name\":\"%s\",\"cat\":\"op\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":1}",
                  first ? "" : ",", op_name(e.op), (e.start_s - origin) * 1e6, e.dur_s * 1e6);
    out += buf;
    first = false;
  }
  out += "],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

}  // namespace tinfer

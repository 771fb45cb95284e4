// Profile tables: ms per step, share of the step, GB/s and GOP/s against the same process's roofline.
#include "bench/profile_report.h"

#include <fstream>

#include "tinfer/error.h"

namespace tinfer::cli {

namespace {

// GEMMs run on int8 (quantized weights) and are set against the int8 peak; everything else is fp32 work.
bool int8_op(Op op) {
  return op == Op::kMatmulQkv || op == Op::kMatmulOut || op == Op::kMatmulGateUp || op == Op::kMatmulDown ||
         op == Op::kLmHead || op == Op::kExitHead;
}

}  // namespace

void print_profile(std::FILE* out, const char* title, const OpProfile& p, int64_t steps, double wall_s,
                   const Roofline3& roof) {
  const double total = p.total_seconds();
  std::fprintf(out, "profile      %s: %lld steps, %.3f ms/step wall, categories cover %.1f%%\n", title,
               static_cast<long long>(steps), 1e3 * wall_s / double(steps), wall_s > 0 ? 100 * total / wall_s : 0.0);
  std::fprintf(out, "  %-15s %10s %7s %8s %9s %7s %9s %7s\n", "op", "ms/step", "share", "calls", "GB/s", "%read",
               "GOP/s", "%peak");
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const OpStat& s = p[op];
    if (s.calls == 0) continue;
    const double gbs = s.seconds > 0 ? s.bytes / s.seconds / 1e9 : 0, gops = s.seconds > 0 ? s.ops / s.seconds / 1e9 : 0;
    // (A batch's GEMMs take bf16 dots; its m = 1 rows would be memory-bound whatever the peak.)
    const double peak = !int8_op(op)        ? roof.fp32_gflops
                        : roof.int8_gemms   ? roof.int8_gops
                        : roof.bf16_gemms   ? 2 * roof.fp32_gflops
                                            : roof.fp32_gflops;
    char bw[32] = "-", bwp[16] = "-", ops[32] = "-", opsp[16] = "-";
    if (s.bytes > 0) {
      std::snprintf(bw, sizeof bw, "%.1f", gbs);
      if (roof.read_gbps > 0) std::snprintf(bwp, sizeof bwp, "%.0f%%", 100 * gbs / roof.read_gbps);
    }
    if (s.ops > 0) {
      std::snprintf(ops, sizeof ops, "%.1f", gops);
      if (peak > 0) std::snprintf(opsp, sizeof opsp, "%.0f%%", 100 * gops / peak);
    }
    std::fprintf(out, "  %-15s %10.3f %6.1f%% %8.1f %9s %7s %9s %7s\n", op_name(op), 1e3 * s.seconds / double(steps),
                 total > 0 ? 100 * s.seconds / total : 0.0, double(s.calls) / double(steps), bw, bwp, ops, opsp);
  }
}

std::string profile_json(const OpProfile& p, int64_t steps, double wall_s) {
  std::string j = "{\"steps\":" + std::to_string(steps) + ",\"wall_ms_per_step\":" +
                  std::to_string(1e3 * wall_s / double(steps)) + ",\"ops\":{";
  bool first = true;
  for (int i = 0; i < kNumOps; ++i) {
    const OpStat& s = p[static_cast<Op>(i)];
    if (s.calls == 0) continue;
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s\"%s\":{\"ms_per_step\":%.4f,\"calls\":%lld,\"gbps\":%.2f,\"gops\":%.2f}",
                  first ? "" : ",", op_name(static_cast<Op>(i)), 1e3 * s.seconds / double(steps),
                  static_cast<long long>(s.calls), s.seconds > 0 ? s.bytes / s.seconds / 1e9 : 0.0,
                  s.seconds > 0 ? s.ops / s.seconds / 1e9 : 0.0);
    j += buf;
    first = false;
  }
  return j + "}}";
}

void write_trace(const OpProfile& p, const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  check(bool(f), "cannot write the trace file '" + path + "'");
  f << trace_event_json(p);
  check(bool(f), "cannot write the trace file '" + path + "'");
}

}  // namespace tinfer::cli

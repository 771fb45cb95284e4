// Roofline probe: measures, in this process, the memory read bandwidth and the fp32 / int8 compute peaks
// that bound a decode step (tokens/s <= read bandwidth / weight bytes) so benchmarks can quote efficiency.
#pragma once
#include <cstddef>

namespace tinfer {

class ThreadPool;

struct Roofline {
  double read_gbps = 0;    // streaming read bandwidth, GB/s (1e9 bytes), median of the passes
  double fp32_gflops = 0;  // FMA peak, GFLOP/s (an FMA counts 2)
  double int8_gops = 0;    // u8*s8 dot peak, GOP/s (a multiply-accumulate counts 2)
  int n_threads = 0;
  double huge_page_fraction = -1;  // share of the read buffer backed by THP; -1 unknown
  const char* isa = "";            // code path used: "avx512", "avx2" or "generic" (TINFER_ISA forces one)
};

struct RooflineOptions {
  size_t read_bytes = size_t(512) << 20;  // streamed buffer; must be well above the last-level cache
  int read_passes = 9;                    // the median pass is reported
  bool huge_pages = true;                 // Buffer(bytes, true): 2 MiB aligned + MADV_HUGEPAGE
  double compute_seconds = 0.15;          // per compute probe (split into timed repetitions)
  int isa = -1;                           // an Isa value to measure that code path; -1 = active_isa()
};

// Runs the three probes on every thread of `pool` (about 0.3-0.6 s in all with the defaults).
Roofline measure_roofline(ThreadPool& pool, const RooflineOptions& opt = {});
// Convenience: a temporary pool of n_threads (0 = hardware concurrency).
Roofline measure_roofline(int n_threads, const RooflineOptions& opt = {});

// The individual probes. huge_fraction (optional) receives the THP share of the read buffer.
double measure_read_gbps(ThreadPool& pool, size_t bytes, int passes, bool huge_pages,
                         double* huge_fraction = nullptr);
double measure_fp32_gflops(ThreadPool& pool, double seconds);
double measure_int8_gops(ThreadPool& pool, double seconds);

}  // namespace tinfer

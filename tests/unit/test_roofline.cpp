// Roofline probe: every ISA path this CPU has gives finite, positive numbers (no performance asserts:
// the machines are shared and noisy). The measured figures are printed for the record.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "core/isa.h"
#include "core/roofline.h"
#include "core/thread_pool.h"

namespace tinfer {
namespace {

bool finite_positive(double v) { return std::isfinite(v) && v > 0; }

TEST(Roofline, EveryIsaGivesFinitePositiveFigures) {
  ThreadPool pool(2);
  RooflineOptions opt;
  opt.read_bytes = size_t(128) << 20;
  opt.read_passes = 3;
  opt.compute_seconds = 0.05;
  for (Isa isa : supported_isas()) {
    opt.isa = int(isa);
    const Roofline r = measure_roofline(pool, opt);
    std::printf("[%s] read %.1f GB/s (THP %.0f%%), fp32 %.1f GFLOP/s, int8 %.1f GOP/s, %d threads\n", r.isa,
                r.read_gbps, 100 * r.huge_page_fraction, r.fp32_gflops, r.int8_gops, r.n_threads);
    EXPECT_STREQ(r.isa, isa_name(isa));
    EXPECT_TRUE(finite_positive(r.read_gbps)) << r.read_gbps;
    EXPECT_TRUE(finite_positive(r.fp32_gflops)) << r.fp32_gflops;
    EXPECT_TRUE(finite_positive(r.int8_gops)) << r.int8_gops;
    EXPECT_EQ(r.n_threads, 2);
  }
}

TEST(Roofline, WithoutHugePagesAndOneThread) {
  ThreadPool pool(1);
  const double gbps = measure_read_gbps(pool, size_t(64) << 20, 3, false);
  EXPECT_TRUE(finite_positive(gbps)) << gbps;
}

}  // namespace
}  // namespace tinfer

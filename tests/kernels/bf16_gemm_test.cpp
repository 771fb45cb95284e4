// The BF16 dot-product GEMM (kernels/cpu/common/gemm_bf16.h) against an fp64 reference on ragged
// shapes: rows not a multiple of the 4-row tile or the 16-row unit, cols not a multiple of 32 (the
// masked tail), m = 1..70 (past kMaxGemmRows = 64, so matmul splits the activation rows).
//
// The kernel is compiled here from the same header as the AVX-512 table, with TINFER_BF16_EMULATE: a
// plain-C++ model of vdpbf16ps / vcvtne2ps2bf16 / the masked load, so the tiling, tails, reductions and
// matmul's activation panel are tested on every machine. Where the CPU has AVX512-BF16 the native table
// entry is also checked against the same bounds, and against the model.
//
// Bounds, per output y = sum_k w_k x_k with S = sum_k |w_k x_k| (fp64):
//  - activations rounded to bf16 (RNE): |x_k - bf16(x_k)| <= 2^-8 |x_k| (8 significant bits), the bf16 x bf16 products are
//    exact in fp32, so |got - y| <= 2^-8 S + fp32 summation error;
//  - fp32 summation: each lane adds cols / 16 products in sequence, then the lanes are reduced (4
//    levels natively, 15 sequential adds in the model): depth d <= cols / 16 + 20, |error| <= d * 2^-24 * S
//    (first order), held at 2x;
//  - activations already bf16-representable: only the summation term (the "exactness" test).
// A wrong index, a lost tail or a stale accumulator moves an output by O(S), far outside both.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#define TINFER_BF16_EMULATE 1
#include "kernels/cpu/common/gemm_bf16.h"

#include "tinfer/error.h"
#include "core/isa.h"
#include "core/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/kernel_test_util.h"
#include "kernels/kernels.h"

namespace tinfer {
namespace {

float widen_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Ref {
  std::vector<double> y, s;  // W.x (fp64) and sum |w x| per output
};

// The fp64 reference over the bf16 weights (GGUF rows) and fp32 activations.
Ref reference(const std::vector<uint8_t>& w, int64_t rows, int64_t cols, const std::vector<float>& x, int64_t m) {
  Ref r;
  r.y.resize(size_t(m * rows));
  r.s.resize(r.y.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t o = 0; o < rows; ++o) {
      double y = 0, s = 0;
      for (int64_t k = 0; k < cols; ++k) {
        uint16_t h;
        std::memcpy(&h, w.data() + (o * cols + k) * 2, 2);
        const double p = double(widen_bf16(h)) * x[size_t(i * cols + k)];
        y += p;
        s += std::fabs(p);
      }
      r.y[size_t(i * rows + o)] = y;
      r.s[size_t(i * rows + o)] = s;
    }
  return r;
}

double sum_bound(int64_t cols) { return 2.0 * double(cols / 16 + 20) * std::ldexp(1.0, -24); }
double bf16_bound(int64_t cols) { return std::ldexp(1.0, -8) + sum_bound(cols); }

// Counts outputs outside |got - y| <= rel * S (and reports the first).
int64_t out_of_bound(const std::vector<float>& got, const Ref& r, double rel) {
  int64_t bad = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double err = std::fabs(double(got[k]) - r.y[k]);
    if (!(err <= rel * r.s[k] + 1e-30)) {
      if (bad == 0) ADD_FAILURE() << "output " << k << ": got " << got[k] << " want " << r.y[k] << " err " << err
                                  << " bound " << rel * r.s[k];
      ++bad;
    }
  }
  return bad;
}

// Rounds x to bf16 values (kept as floats): inputs on which the kernel must be exact.
std::vector<float> bf16_valued(std::vector<float> x) {
  for (float& v : x) v = widen_bf16(bf16k::to_bf16_scalar(v));
  return x;
}

struct Shape {
  int64_t rows, cols, m;
};
const Shape kShapes[] = {{1, 1, 1},   {3, 31, 2},   {4, 32, 1},    {5, 33, 3},   {7, 63, 6},   {9, 64, 7},
                         {17, 100, 5}, {33, 95, 13}, {16, 576, 16}, {21, 583, 4}, {45, 17, 70}, {6, 1537, 9}};

// Runs gemm (the emulated model or a native entry) on the whole shape, as one call.
std::vector<float> run_kernel(FloatGemmFn gemm, decltype(&bf16k::round_acts) round, const std::vector<uint8_t>& w,
                              int64_t rows, int64_t cols, const std::vector<float>& x, int64_t m) {
  const int64_t ldxb = (cols + 31) / 32 * 32;
  std::vector<uint16_t> xb(size_t(m * ldxb), 0xffff);  // padding must be written by round
  round(x.data(), cols, 0, m, xb.data(), ldxb);
  FloatGemmArgs g;
  g.type = DType::BF16;
  g.w = w.data();
  g.row_bytes = cols * 2;
  g.cols = cols;
  g.xb = xb.data();
  g.ldxb = ldxb;
  std::vector<float> y(size_t(m * rows), -1e30f);
  g.y = y.data();
  g.ldy = rows;
  gemm(g, 0, rows, 0, m);
  return y;
}

TEST(Bf16GemmTest, ModelKernelWithinBf16RoundingBound) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(testing::Message() << "rows=" << s.rows << " cols=" << s.cols << " m=" << s.m);
    // Weights in an exact-size buffer: a read past the last row's end is caught by ASan builds.
    const auto w = test::random_weights(DType::BF16, s.rows, s.cols, uint32_t(s.rows * 31 + s.cols));
    const auto x = test::random_floats(size_t(s.m * s.cols), uint32_t(s.m * 5 + s.cols));
    const Ref r = reference(w, s.rows, s.cols, x, s.m);
    EXPECT_EQ(0, out_of_bound(run_kernel(bf16k::gemm, bf16k::round_acts, w, s.rows, s.cols, x, s.m), r,
                              bf16_bound(s.cols)));
  }
}

TEST(Bf16GemmTest, ModelKernelExactOnBf16Activations) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(testing::Message() << "rows=" << s.rows << " cols=" << s.cols << " m=" << s.m);
    const auto w = test::random_weights(DType::BF16, s.rows, s.cols, uint32_t(s.rows * 37 + s.cols));
    const auto x = bf16_valued(test::random_floats(size_t(s.m * s.cols), uint32_t(s.m * 3 + s.cols)));
    const Ref r = reference(w, s.rows, s.cols, x, s.m);
    EXPECT_EQ(0, out_of_bound(run_kernel(bf16k::gemm, bf16k::round_acts, w, s.rows, s.cols, x, s.m), r,
                              sum_bound(s.cols)));
  }
}

// The rounding: ties to even, NaN stays NaN, denormals to signed zero, the panel padding zeroed.
TEST(Bf16GemmTest, RoundingIsNearestEven) {
  auto bits = [](float f) { return bf16k::to_bf16_scalar(f); };
  EXPECT_EQ(bits(1.0f), 0x3f80);
  EXPECT_EQ(bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie: 1 + half an ulp -> even (1.0)
  EXPECT_EQ(bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie above an odd mantissa -> up
  EXPECT_EQ(bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);  // past the tie -> up
  EXPECT_EQ(bits(-2.5f), 0xc020);
  EXPECT_EQ(bits(1e-40f), 0x0000);
  EXPECT_EQ(bits(-1e-40f), 0x8000);
  EXPECT_EQ(bits(INFINITY), 0x7f80);
  EXPECT_TRUE(std::isnan(widen_bf16(bits(NAN))));
  EXPECT_EQ(bits(3.4028235e38f), 0x7f80);  // FLT_MAX rounds up to inf, as RNE must
  // The panel: a 40-wide row is 32 + 8 values and 24 zeros of padding.
  const auto x = test::random_floats(40, 3);
  std::vector<uint16_t> xb(64, 0xffff);
  bf16k::round_acts(x.data(), 40, 0, 1, xb.data(), 64);
  for (int k = 0; k < 40; ++k) EXPECT_EQ(xb[size_t(k)], bits(x[size_t(k)])) << k;
  for (int k = 40; k < 64; ++k) EXPECT_EQ(xb[size_t(k)], 0) << k;
}

// Where this CPU has AVX512-BF16, the native entries: rounding bit-identical to the model, the GEMM
// within the bounds above. Elsewhere the entries must be null (the table falls back to float_gemm).
TEST(Bf16GemmTest, NativeEntriesMatchModelOrAreAbsent) {
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const KernelTable& kt = kernel_table(isa);
    const bool want = isa == Isa::avx512 && cpu_supports_avx512_bf16();
    ASSERT_EQ(kt.bf16_gemm != nullptr, want);
    ASSERT_EQ(kt.bf16_round_acts != nullptr, want);
    if (!want) continue;
    std::vector<float> x = test::random_floats(1000, 8, 10.0f);
    x[3] = 1.0f + std::ldexp(1.0f, -8);
    x[4] = 1e-40f;
    x[5] = -1e-40f;
    std::vector<uint16_t> a(1024, 1), b(1024, 2);
    bf16k::round_acts(x.data(), 1000, 0, 1, a.data(), 1024);
    kt.bf16_round_acts(x.data(), 1000, 0, 1, b.data(), 1024);
    EXPECT_EQ(a, b);
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(testing::Message() << "rows=" << s.rows << " cols=" << s.cols << " m=" << s.m);
      const auto w = test::random_weights(DType::BF16, s.rows, s.cols, uint32_t(s.rows * 41 + s.cols));
      const auto xs = test::random_floats(size_t(s.m * s.cols), uint32_t(s.m * 9 + s.cols));
      const Ref r = reference(w, s.rows, s.cols, xs, s.m);
      EXPECT_EQ(0, out_of_bound(run_kernel(kt.bf16_gemm, kt.bf16_round_acts, w, s.rows, s.cols, xs, s.m), r,
                                bf16_bound(s.cols)));
      const auto xe = bf16_valued(xs);
      const Ref re = reference(w, s.rows, s.cols, xe, s.m);
      EXPECT_EQ(0, out_of_bound(run_kernel(kt.bf16_gemm, kt.bf16_round_acts, w, s.rows, s.cols, xe, s.m), re,
                                sum_bound(s.cols)));
    }
  }
}

// matmul with the BF16 entries (the model where the CPU has none) on every table: the activation panel,
// the split over threads and activation chunks (m = 70 > 64), decode (m = 1) staying exact fp32.
TEST(Bf16GemmTest, MatmulUsesBf16EntriesForBatchesOnEveryTable) {
  ThreadPool pool(2);
  for (Isa isa : supported_isas()) {
    KernelTable kt = kernel_table(isa);
    if (!kt.bf16_gemm) {
      kt.bf16_gemm = bf16k::gemm;
      kt.bf16_round_acts = bf16k::round_acts;
    }
    const KernelTable exact = with_float_gemm_mode(kt, "fp32");
    ASSERT_EQ(exact.bf16_gemm, nullptr);
    for (const Shape& s : {Shape{35, 583, 70}, Shape{50, 64, 2}, Shape{17, 96, 1}, Shape{64, 1000, 65}}) {
      SCOPED_TRACE(testing::Message() << isa_name(isa) << " rows=" << s.rows << " cols=" << s.cols << " m=" << s.m);
      const auto w = test::random_weights(DType::BF16, s.rows, s.cols, uint32_t(s.rows + s.cols));
      const auto x = test::random_floats(size_t(s.m * s.cols), uint32_t(s.m + s.cols));
      const Ref r = reference(w, s.rows, s.cols, x, s.m);
      const PackedMatrix pw = pack_matrix(DType::BF16, w.data(), s.rows, s.cols);
      std::vector<float> got(size_t(s.m * s.rows), -1e30f), got_exact(got.size(), -1e30f);
      matmul(pw, x.data(), s.m, got.data(), pool, kt);
      matmul(pw, x.data(), s.m, got_exact.data(), pool, exact);
      EXPECT_EQ(0, out_of_bound(got, r, bf16_bound(s.cols)));
      EXPECT_EQ(0, out_of_bound(got_exact, r, sum_bound(s.cols)));
      // The bf16 path was taken for batches (its error is visible) and not for decode.
      double d = 0;
      for (size_t k = 0; k < got.size(); ++k) d = std::max(d, std::fabs(double(got[k]) - got_exact[k]));
      if (s.m > 1) EXPECT_GT(d, 0.0);
      else EXPECT_EQ(d, 0.0);
    }
  }
}

// TINFER_FLOAT_GEMM=bf16 on every table: the native dots, or (without them) the activations rounded to
// bf16 and run through float_gemm; either way within the bf16 bound and not the exact fp32 result.
TEST(Bf16GemmTest, ForcedBf16ModeRoundsActivationsOnEveryTable) {
  ThreadPool pool(2);
  const int64_t rows = 37, cols = 301, m = 9;
  const auto w = test::random_weights(DType::BF16, rows, cols, 77);
  const auto x = test::random_floats(size_t(m * cols), 78);
  const Ref r = reference(w, rows, cols, x, m);
  const PackedMatrix pw = pack_matrix(DType::BF16, w.data(), rows, cols);
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const KernelTable kt = with_float_gemm_mode(kernel_table(isa), "bf16");
    ASSERT_NE(kt.bf16_round_acts, nullptr);
    std::vector<float> got(size_t(m * rows), -1e30f), exact(got.size(), -1e30f);
    matmul(pw, x.data(), m, got.data(), pool, kt);
    matmul(pw, x.data(), m, exact.data(), pool, with_float_gemm_mode(kernel_table(isa), "fp32"));
    EXPECT_EQ(0, out_of_bound(got, r, bf16_bound(cols)));
    EXPECT_EQ(0, out_of_bound(exact, r, sum_bound(cols)));
    EXPECT_NE(got, exact);
  }
}

TEST(Bf16GemmTest, FloatGemmModeParses) {
  KernelTable kt = kernel_table(Isa::generic);
  kt.bf16_gemm = bf16k::gemm;
  kt.bf16_round_acts = bf16k::round_acts;
  EXPECT_EQ(with_float_gemm_mode(kt, nullptr).bf16_gemm, kt.bf16_gemm);
  EXPECT_EQ(with_float_gemm_mode(kt, "").bf16_gemm, kt.bf16_gemm);
  EXPECT_EQ(with_float_gemm_mode(kt, "bf16").bf16_gemm, kt.bf16_gemm);
  EXPECT_EQ(with_float_gemm_mode(kt, "fp32").bf16_gemm, nullptr);
  EXPECT_EQ(with_float_gemm_mode(kt, "fp32").bf16_round_acts, nullptr);
  EXPECT_THROW(with_float_gemm_mode(kt, "fp16"), Error);
}

}  // namespace
}  // namespace tinfer

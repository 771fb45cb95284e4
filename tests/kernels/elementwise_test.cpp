// Element-wise ops of every ISA's table vs the scalar references, on lengths with ragged tails.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/isa.h"
#include "kernels/kernel_table.h"
#include "kernels/kernel_test_util.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace tinfer {
namespace {

// fp32 vs double reference; exp is a polynomial good to a few ulp, so 2e-6 relative + tiny absolute.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel = 2e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * std::fabs(want[i]) + 1e-6) << "at " << i;
}

const int64_t kLengths[] = {1, 3, 7, 16, 17, 33, 100, 1000, 4099};

TEST(ElementwiseTest, EveryIsaMatchesReference) {
  for (Isa isa : supported_isas()) {
    const KernelTable& kt = kernel_table(isa);
    for (int64_t n : kLengths) {
      SCOPED_TRACE(testing::Message() << isa_name(isa) << " n=" << n);
      const auto a = test::random_floats(size_t(n), uint32_t(n), 2.0f);
      const auto b = test::random_floats(size_t(n), uint32_t(n + 1), 2.0f);
      std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));

      kt.rmsnorm(a.data(), b.data(), got.data(), n, 1e-5f);
      ref::rmsnorm(a.data(), b.data(), want.data(), n, 1e-5f);
      expect_close(got, want, 1e-5);

      got = a, want = a;
      kt.silu_mul(got.data(), b.data(), n);
      ref::silu_mul(want.data(), b.data(), n);
      expect_close(got, want);

      got = a, want = a;
      kt.gelu_mul(got.data(), b.data(), n);
      ref::gelu_mul(want.data(), b.data(), n);
      expect_close(got, want);

      got = a, want = a;
      kt.add_inplace(got.data(), b.data(), n);
      ref::add_inplace(want.data(), b.data(), n);
      expect_close(got, want);

      got = a, want = a;
      kt.axpy(0.37f, b.data(), got.data(), n);
      ref::axpy(0.37f, b.data(), want.data(), n);
      expect_close(got, want);

      got = a, want = a;
      kt.scale_inplace(got.data(), -1.5f, n);
      ref::scale_inplace(want.data(), -1.5f, n);
      expect_close(got, want);

      EXPECT_NEAR(kt.dot_f32(a.data(), b.data(), n), ref::dot_f32(a.data(), b.data(), n), 1e-5 * double(n));

      got = a, want = a;
      for (auto* v : {&got, &want}) (*v)[0] *= 20.0f;  // a large logit
      if (n > 3) got[2] = want[2] = -std::numeric_limits<float>::infinity();  // a masked position
      kt.softmax_inplace(got.data(), n);
      ref::softmax_inplace(want.data(), n);
      expect_close(got, want, 1e-5);
    }
  }
}

// The sampler's tempered weights: exp((x - best) / T) per element against double exp, NaN and -inf weighing 0,
// and each kExpChunk chunk's sum against the double sum of the reference weights (the last chunk partial).
TEST(ElementwiseTest, ExpWeightsMatchReferenceOnEveryIsa) {
  const float kNan = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  for (Isa isa : supported_isas()) {
    const KernelTable& kt = kernel_table(isa);
    for (int64_t n : {int64_t(1), int64_t(15), int64_t(64), int64_t(65), int64_t(1000), int64_t(4099)}) {
      for (float inv_t : {1.0f, 1.25f, 0.1f}) {
        SCOPED_TRACE(testing::Message() << isa_name(isa) << " n=" << n << " 1/T=" << inv_t);
        auto x = test::random_floats(size_t(n), uint32_t(7 * n + 1), 8.0f);
        if (n > 5) x[3] = kNan, x[5] = -kInf, x[n - 1] = -200.0f;  // NaN, masked, below exp's range
        float best = -kInf;
        for (float v : x) best = v > best ? v : best;  // (NaN never wins)
        const int64_t chunks = (n + kExpChunk - 1) / kExpChunk;
        std::vector<float> e(size_t(n), -1.0f), sums(size_t(chunks), -1.0f);
        kt.exp_weights(x.data(), n, best, inv_t, e.data(), sums.data());
        std::vector<double> want(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          const float w = (x[size_t(i)] - best) * inv_t;  // the argument as the kernel rounds it: exp checked alone
          want[size_t(i)] = std::isnan(x[size_t(i)]) ? 0.0 : std::exp(double(w));
          ASSERT_NEAR(e[size_t(i)], want[size_t(i)], 4e-6 * want[size_t(i)] + 1e-30) << "at " << i;
        }
        for (int64_t c = 0; c < chunks; ++c) {
          double ws = 0;
          for (int64_t i = c * kExpChunk; i < std::min(n, (c + 1) * kExpChunk); ++i) ws += want[size_t(i)];
          ASSERT_NEAR(sums[size_t(c)], ws, 1e-5 * ws + 1e-30) << "chunk " << c;
        }
        // In place (the sampler's use): the same values.
        std::vector<float> inplace = x;
        kt.exp_weights(inplace.data(), n, best, inv_t, inplace.data(), sums.data());
        EXPECT_EQ(inplace, e);
      }
    }
  }
}

// argmax against the plain first-max loop: random rows with ragged lengths, ties planted across block edges,
// NaNs, all -inf and all NaN rows.
TEST(ElementwiseTest, ArgmaxIsTheFirstLargestOnEveryIsa) {
  const float kNan = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  auto plain = [](const std::vector<float>& x) {
    int64_t best = -1;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] == x[i] && (best < 0 || x[i] > x[size_t(best)])) best = int64_t(i);
    return best < 0 ? int64_t(0) : best;
  };
  for (Isa isa : supported_isas()) {
    const KernelTable& kt = kernel_table(isa);
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(256), int64_t(257), int64_t(1000), int64_t(49152)}) {
      SCOPED_TRACE(testing::Message() << isa_name(isa) << " n=" << n);
      auto x = test::random_floats(size_t(n), uint32_t(n + 3), 4.0f);
      EXPECT_EQ(kt.argmax(x.data(), n), plain(x));
      if (n > 300) {
        x[299] = x[5] = 100.0f;  // a tie across blocks: the lower id
        x[2] = kNan;
        EXPECT_EQ(kt.argmax(x.data(), n), 5);
        x[5] = kNan;
        EXPECT_EQ(kt.argmax(x.data(), n), 299);
        x[n - 1] = kInf;
        EXPECT_EQ(kt.argmax(x.data(), n), n - 1);
      }
      std::vector<float> neg(size_t(n), -kInf);
      neg[0] = kNan;
      EXPECT_EQ(kt.argmax(neg.data(), n), n > 1 ? 1 : 0);
      std::vector<float> nan(size_t(n), kNan);
      EXPECT_EQ(kt.argmax(nan.data(), n), 0);
    }
  }
}

TEST(ElementwiseTest, ActiveIsaWrappers) {
  const int64_t n = 37;
  const auto a = test::random_floats(size_t(n), 1), b = test::random_floats(size_t(n), 2);
  std::vector<float> got = a, want = a;
  silu_mul(got.data(), b.data(), n);
  ref::silu_mul(want.data(), b.data(), n);
  expect_close(got, want);
  EXPECT_NEAR(dot_f32(a.data(), b.data(), n), ref::dot_f32(a.data(), b.data(), n), 1e-4);
  rmsnorm(a.data(), b.data(), got.data(), n, 1e-6f);
  ref::rmsnorm(a.data(), b.data(), want.data(), n, 1e-6f);
  expect_close(got, want, 1e-5);
}

TEST(ElementwiseTest, SiluExtremes) {
  std::vector<float> g = {-100.0f, -20.0f, 0.0f, 20.0f, 100.0f, -1e-3f, 1e-3f, 5.0f}, up(8, 1.0f);
  for (Isa isa : supported_isas()) {
    std::vector<float> got = g, want = g;
    kernel_table(isa).silu_mul(got.data(), up.data(), 8);
    ref::silu_mul(want.data(), up.data(), 8);
    SCOPED_TRACE(isa_name(isa));
    expect_close(got, want);
    got = g, want = g;
    kernel_table(isa).gelu_mul(got.data(), up.data(), 8);
    ref::gelu_mul(want.data(), up.data(), 8);
    expect_close(got, want);
  }
}

}  // namespace
}  // namespace tinfer

// quantize -> dequantize on random rows: error within a named tolerance per type, zero and extreme
// magnitudes, ragged block counts, block independence, and re-quantization stability.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "quant/blocks.h"
#include "quant/type_table.h"
#include "quant_test_util.h"

namespace tinfer {
namespace {

using test::dequantize;
using test::quantize;
using test::relative_rmse;

// Relative RMSE bound (||x - D(Q(x))|| / ||x||) per type over the distributions below. Float types:
// the unit roundoff (2^-11 for f16, 2^-8 for bf16), a hard bound. Block types: about 1.5x the worst
// value measured (q8_0 0.011, q4_0 0.150, q4_1 0.154, q4_K 0.105, q6_K 0.028, q5_0 0.080, q5_1 0.065,
// q2_K 0.447, q3_K 0.183, q5_K 0.055; heavy-tailed single blocks are the worst case), so a real
// regression fails but seed noise does not.
// `requant_exact`: Q(D(Q(x))) == Q(x) byte for byte, i.e. dequantized values are a fixed point.
struct Tolerance {
  DType type;
  double rel_rmse;
  bool requant_exact;
};
constexpr Tolerance kTolerances[] = {
    {DType::F32, 0.0, true},     {DType::F16, 4.9e-4, true}, {DType::BF16, 3.9e-3, true}, {DType::Q8_0, 0.016, true},
    {DType::Q4_0, 0.22, true},   {DType::Q4_1, 0.22, false}, {DType::Q4_K, 0.15, false},  {DType::Q6_K, 0.042, false},
    {DType::Q5_0, 0.12, true},   {DType::Q5_1, 0.10, false}, {DType::Q2_K, 0.67, false},  {DType::Q3_K, 0.28, false},
    {DType::Q5_K, 0.082, false},
};

enum class Dist { Normal, Uniform, Laplace, Cubed };
const char* dist_name(Dist d) {
  switch (d) {
    case Dist::Normal:
      return "normal";
    case Dist::Uniform:
      return "uniform";
    case Dist::Laplace:
      return "laplace";
    case Dist::Cubed:
      return "normal^3";
  }
  return "?";
}

std::vector<float> random_row(int64_t n, Dist dist, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::exponential_distribution<float> expo(1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) {
    switch (dist) {
      case Dist::Normal:
        v = normal(rng);
        break;
      case Dist::Uniform:
        v = uniform(rng);
        break;
      case Dist::Laplace:
        v = expo(rng) * (uniform(rng) < 0 ? -1.0f : 1.0f);
        break;
      case Dist::Cubed: {
        const float g = normal(rng);
        v = g * g * g;
        break;
      }
    }
    v *= scale;
  }
  return x;
}

// Ragged sizes: block counts that are not multiples of any vector width or thread split.
std::vector<int64_t> ragged_sizes(const TypeTraits& t) {
  if (t.block_size == 1) return {1, 7, 33, 1000, 4099};
  return {t.block_size, 3 * t.block_size, 7 * t.block_size, 13 * t.block_size};
}

class RoundTrip : public ::testing::TestWithParam<Tolerance> {
 protected:
  const TypeTraits& traits() const { return type_traits(GetParam().type); }
};

TEST_P(RoundTrip, RelativeErrorWithinTolerance) {
  const TypeTraits& t = traits();
  uint32_t seed = 1;
  for (Dist dist : {Dist::Normal, Dist::Uniform, Dist::Laplace, Dist::Cubed}) {
    // 1e-2 .. 1e3: the range where fp16 block scales keep full precision.
    for (float scale : {1e-2f, 1.0f, 1e3f}) {
      for (int64_t n : ragged_sizes(t)) {
        const auto x = random_row(n, dist, scale, seed++);
        const double err = relative_rmse(x, dequantize(t, quantize(t, x), n));
        EXPECT_LE(err, GetParam().rel_rmse) << t.name << " " << dist_name(dist) << " scale " << scale << " n " << n;
      }
    }
  }
}

TEST_P(RoundTrip, ZeroBlocksDequantizeToZero) {
  const TypeTraits& t = traits();
  // A zero block between two non-zero ones: the zero block must not borrow their scales.
  const int64_t bs = std::max<int64_t>(t.block_size, 32);
  auto x = random_row(3 * bs, Dist::Normal, 1.0f, 7);
  std::fill(x.begin() + bs, x.begin() + 2 * bs, 0.0f);
  const auto y = dequantize(t, quantize(t, x), 3 * bs);
  for (int64_t i = bs; i < 2 * bs; ++i) ASSERT_EQ(y[size_t(i)], 0.0f) << t.name << " element " << i;
  const std::vector<float> zeros(size_t(bs), 0.0f);
  for (float v : dequantize(t, quantize(t, zeros), bs)) ASSERT_EQ(v, 0.0f) << t.name;
}

TEST_P(RoundTrip, TinyAndHugeMagnitudesStayBounded) {
  const TypeTraits& t = traits();
  const int64_t n = 5 * std::max<int64_t>(t.block_size, 32);
  // Tiny: block scales fall into (or under) fp16's subnormal range, so the relative error may be
  // large (scale rounding to 2^-24 steps is multiplied by up to 63*15 codes), but output must stay
  // finite and not blow up: |y| <= 2 max|x| + 1e-6.
  for (float scale : {1e-7f, 1e-12f}) {
    const auto x = random_row(n, Dist::Normal, scale, 11);
    float amax = 0;
    for (float v : x) amax = std::max(amax, std::fabs(v));
    const auto y = dequantize(t, quantize(t, x), n);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << t.name << " scale " << scale;
      ASSERT_LE(std::fabs(y[i]), 2 * amax + 1e-6f) << t.name << " scale " << scale << " element " << i;
    }
  }
  // Huge but representable: |x| up to ~4e4 keeps every fp16 scale/min finite.
  const auto x = random_row(n, Dist::Uniform, 4e4f, 12);
  EXPECT_LE(relative_rmse(x, dequantize(t, quantize(t, x), n)), GetParam().rel_rmse) << t.name;
}

TEST_P(RoundTrip, BlocksAreIndependentAndRowStaysInBounds) {
  const TypeTraits& t = traits();
  for (int64_t n : ragged_sizes(t)) {
    const auto x = random_row(n, Dist::Laplace, 1.0f, uint32_t(n));
    const size_t bytes = row_bytes(t.type, n);
    // Canary bytes after the row catch writes past row_bytes(n).
    std::vector<uint8_t> whole(bytes + 64, 0xA5);
    t.from_float(x.data(), whole.data(), n);
    for (size_t i = bytes; i < whole.size(); ++i) ASSERT_EQ(whole[i], 0xA5) << t.name << " n " << n;
    // The same row quantized one block at a time gives the same bytes.
    std::vector<uint8_t> pieces(bytes);
    for (int64_t b = 0; b < n / t.block_size; ++b)
      t.from_float(x.data() + b * t.block_size, pieces.data() + b * t.block_bytes, t.block_size);
    ASSERT_EQ(0, std::memcmp(whole.data(), pieces.data(), bytes)) << t.name << " n " << n;
  }
}

TEST_P(RoundTrip, RequantizeIsStable) {
  const TypeTraits& t = traits();
  const int64_t n = 16 * std::max<int64_t>(t.block_size, 32);
  for (Dist dist : {Dist::Normal, Dist::Laplace}) {
    const auto x = random_row(n, dist, 1.0f, 21);
    const auto q1 = quantize(t, x);
    const auto y1 = dequantize(t, q1, n);
    const auto q2 = quantize(t, y1);
    if (GetParam().requant_exact) {
      EXPECT_EQ(q1, q2) << t.name << " " << dist_name(dist);
    } else {
      // Formats whose scale search can pick a different but equally good scale for the already
      // quantized values: the second round trip must add no more than a small fraction of the first.
      const auto y2 = dequantize(t, q2, n);
      EXPECT_LE(relative_rmse(y1, y2), 0.5 * relative_rmse(x, y1)) << t.name << " " << dist_name(dist);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, RoundTrip, ::testing::ValuesIn(kTolerances),
                         [](const auto& info) { return std::string(type_traits(info.param.type).name); });

// ggml's K-quant conventions, visible in the bytes: the largest sub-block scale is quantized to
// the top code (Q4_K/Q5_K: 6-bit 63; Q2_K: 4-bit 15; Q6_K: int8 -128; Q3_K: level 0 = scale -32), so
// the fp16 super-block scale carries the range.
template <class B>
B block_at(const std::vector<uint8_t>& q, int b) {
  B k;
  std::memcpy(&k, q.data() + b * sizeof(B), sizeof k);
  return k;
}
int max_q45k_scale(const uint8_t* s) {  // the 6-bit scale field of Q4_K/Q5_K, largest of 8
  int m = 0;
  for (int j = 0; j < 4; ++j) m = std::max({m, s[j] & 63, (s[j + 8] & 0xF) | ((s[j] >> 6) << 4)});
  return m;
}
TEST(KQuantLayout, LargestSubBlockScaleUsesTheTopCode) {
  const auto x = random_row(8 * kQK_K, Dist::Laplace, 1.0f, 5);
  const auto q2 = quantize(type_traits(DType::Q2_K), x);
  const auto q3 = quantize(type_traits(DType::Q3_K), x);
  const auto q4 = quantize(type_traits(DType::Q4_K), x);
  const auto q5 = quantize(type_traits(DType::Q5_K), x);
  const auto q6 = quantize(type_traits(DType::Q6_K), x);
  for (int b = 0; b < 8; ++b) {
    EXPECT_EQ(max_q45k_scale(block_at<BlockQ4_K>(q4, b).scales), 63) << "q4_K block " << b;
    EXPECT_EQ(max_q45k_scale(block_at<BlockQ5_K>(q5, b).scales), 63) << "q5_K block " << b;
    const BlockQ2_K k2 = block_at<BlockQ2_K>(q2, b);
    int max2 = 0;
    for (uint8_t s : k2.scales) max2 = std::max(max2, s & 0xF);
    EXPECT_EQ(max2, 15) << "q2_K block " << b;
    // Q3_K: some sub-block's 6-bit level is 0 (low nibble 0 and high 2 bits 0).
    const BlockQ3_K k3 = block_at<BlockQ3_K>(q3, b);
    bool has_level0 = false;
    for (int j = 0; j < 16; ++j) {
      const int low = j < 8 ? k3.scales[j] & 0xF : k3.scales[j - 8] >> 4;
      has_level0 |= (low | (((k3.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) == 0;
    }
    EXPECT_TRUE(has_level0) << "q3_K block " << b;
    const BlockQ6_K k6 = block_at<BlockQ6_K>(q6, b);
    EXPECT_EQ(*std::min_element(k6.scales, k6.scales + 16), -128) << "q6_K block " << b;
  }
}

}  // namespace
}  // namespace tinfer

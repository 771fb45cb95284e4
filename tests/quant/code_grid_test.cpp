// The code grid of every quantized type (TypeTraits::grid / get_codes / set_codes) and the
// importance-weighted quantizer (from_float_weighted): the grid reproduces to_float, codes stay in range
// and round-trip byte-exactly, a code edit moves only its element, and the weighted search is never worse
// than the reference with uniform importance and better with skewed importance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/type_table.h"
#include "quant_test_util.h"

namespace tinfer {
namespace {

using test::dequantize;
using test::quantize;

constexpr DType kQuantized[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};

// Rows of `blocks` blocks, one distribution per block (normal, heavy tailed, all positive, sparse,
// tiny), so grids with zero, negative and positive mins and scales all occur.
std::vector<float> test_row(const TypeTraits& t, int64_t blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> x(size_t(blocks * t.block_size));
  for (int64_t b = 0; b < blocks; ++b) {
    const int kind = int(b % 5);
    for (int64_t i = 0; i < t.block_size; ++i) {
      const float g = normal(rng);
      float v = g;
      if (kind == 1) v = g * g * g;
      if (kind == 2) v = 0.5f + uniform(rng);
      if (kind == 3) v = uniform(rng) < 0.1f ? g : 0.0f;
      if (kind == 4) v = g * 1e-3f;
      x[size_t(b * t.block_size + i)] = v;
    }
  }
  return x;
}

std::vector<int32_t> codes_of(const TypeTraits& t, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<int32_t> c(static_cast<size_t>(n));
  t.get_codes(q.data(), c.data(), n);
  return c;
}

// Blocks under test: the reference quantizer's, the weighted quantizer's, and the reference blocks with
// every code replaced by a random one (codes a quantizer would rarely pick, e.g. the range ends).
std::vector<std::vector<uint8_t>> sample_blocks(const TypeTraits& t, int64_t n, uint32_t seed) {
  const auto x = test_row(t, n / t.block_size, seed);
  auto ref = quantize(t, x);
  std::vector<uint8_t> weighted(ref.size());
  t.from_float_weighted(x.data(), weighted.data(), n, nullptr);
  std::vector<uint8_t> shuffled = ref;
  std::mt19937 rng(seed + 1);
  std::uniform_int_distribution<int32_t> code(t.code_min, t.code_max);
  std::vector<int32_t> c(static_cast<size_t>(n));
  for (int32_t& v : c) v = code(rng);
  t.set_codes(shuffled.data(), c.data(), n);
  return {ref, weighted, shuffled};
}

class CodeGrid : public ::testing::TestWithParam<DType> {
 protected:
  const TypeTraits& t() const { return type_traits(GetParam()); }
  int64_t n() const { return 40 * t().block_size; }
};

TEST_P(CodeGrid, GridReproducesToFloat) {
  const int64_t n = this->n();
  for (const auto& q : sample_blocks(t(), n, 3)) {
    const auto y = dequantize(t(), q, n);
    const auto c = codes_of(t(), q, n);
    std::vector<float> scale(static_cast<size_t>(n)), offset(static_cast<size_t>(n));
    t().grid(q.data(), scale.data(), offset.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = size_t(i);
      const double g = double(scale[k]) * c[k] + offset[k];
      // Two float roundings on either side at most (e.g. (q - 8) * d against d * q - 8 * d).
      const double tol = 1e-6 * (std::fabs(double(scale[k]) * c[k]) + std::fabs(offset[k])) + 1e-30;
      ASSERT_NEAR(y[k], g, tol) << t().name << " element " << i << " code " << c[k];
    }
  }
}

TEST_P(CodeGrid, CodesStayInRangeAndTheRangeIsReachable) {
  const int64_t n = this->n();
  ASSERT_LT(t().code_min, t().code_max);
  for (const auto& q : sample_blocks(t(), n, 5))
    for (int32_t c : codes_of(t(), q, n)) ASSERT_TRUE(c >= t().code_min && c <= t().code_max) << t().name << " " << c;
  // Both ends and every code in between survive set/get (a wrong bit width or plane fails here).
  auto q = quantize(t(), test_row(t(), n / t().block_size, 6));
  std::vector<int32_t> want(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) want[size_t(i)] = t().code_min + int32_t(i % (t().code_max - t().code_min + 1));
  std::reverse(want.begin(), want.begin() + t().block_size);  // not only ascending within a block
  t().set_codes(q.data(), want.data(), n);
  EXPECT_EQ(codes_of(t(), q, n), want) << t().name;
}

TEST_P(CodeGrid, SetCodesOfGetCodesIsByteExact) {
  const int64_t n = this->n();
  for (const auto& q : sample_blocks(t(), n, 7)) {
    std::vector<uint8_t> copy(q.size(), 0x5A);  // start from different bytes: every byte must be rewritten
    std::memcpy(copy.data(), q.data(), q.size());
    const auto c = codes_of(t(), q, n);
    // Scribble the codes first so the rewrite cannot pass by leaving them alone.
    std::vector<int32_t> other(c.size());
    for (size_t i = 0; i < c.size(); ++i) other[i] = c[i] == t().code_max ? t().code_min : t().code_max;
    t().set_codes(copy.data(), other.data(), n);
    ASSERT_NE(copy, q) << t().name;
    t().set_codes(copy.data(), c.data(), n);
    ASSERT_EQ(copy, q) << t().name;
  }
}

TEST_P(CodeGrid, SetCodesMovesOnlyTheEditedElements) {
  const int64_t n = this->n();
  std::mt19937 rng(11);
  for (const auto& q : sample_blocks(t(), n, 9)) {
    const auto y0 = dequantize(t(), q, n);
    std::vector<float> s0(static_cast<size_t>(n)), o0(static_cast<size_t>(n)), s1(static_cast<size_t>(n)),
        o1(static_cast<size_t>(n));
    t().grid(q.data(), s0.data(), o0.data(), n);
    auto c = codes_of(t(), q, n);
    std::vector<bool> edited(static_cast<size_t>(n), false);
    for (int64_t i = 0; i < n; ++i) {
      if (rng() % 7 != 0) continue;
      const int32_t old = c[size_t(i)];
      c[size_t(i)] = old == t().code_max ? t().code_min : old + 1;
      edited[size_t(i)] = true;
    }
    auto q1 = q;
    t().set_codes(q1.data(), c.data(), n);
    const auto y1 = dequantize(t(), q1, n);
    t().grid(q1.data(), s1.data(), o1.data(), n);
    ASSERT_EQ(s0, s1) << t().name << ": the scales moved";
    ASSERT_EQ(o0, o1) << t().name << ": the offsets moved";
    ASSERT_EQ(codes_of(t(), q1, n), c) << t().name;
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = size_t(i);
      if (!edited[k]) {
        ASSERT_EQ(y1[k], y0[k]) << t().name << " untouched element " << i << " changed";
      } else {
        const double g = double(s1[k]) * c[k] + o1[k];
        ASSERT_NEAR(y1[k], g, 1e-6 * (std::fabs(double(s1[k]) * c[k]) + std::fabs(o1[k])) + 1e-30) << t().name;
      }
    }
  }
}

TEST_P(CodeGrid, SetCodesClampsToTheRange) {
  const int64_t n = t().block_size;
  auto q = quantize(t(), test_row(t(), 1, 13));
  std::vector<int32_t> c(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) c[size_t(i)] = i % 2 ? t().code_max + 1 + int32_t(i) : t().code_min - 1000;
  t().set_codes(q.data(), c.data(), n);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(codes_of(t(), q, n)[size_t(i)], i % 2 ? t().code_max : t().code_min) << t().name << " " << i;
}

// --- from_float_weighted ---

double weighted_error(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>* w,
                      int64_t from, int64_t count) {
  double e = 0;
  for (int64_t i = from; i < from + count; ++i) {
    const double d = double(x[size_t(i)]) - y[size_t(i)];
    e += (w ? (*w)[size_t(i)] : 1.0) * d * d;
  }
  return e;
}

std::vector<uint8_t> quantize_weighted(const TypeTraits& t, const std::vector<float>& x, const float* importance) {
  std::vector<uint8_t> q(row_bytes(t.type, int64_t(x.size())));
  t.from_float_weighted(x.data(), q.data(), int64_t(x.size()), importance);
  return q;
}

TEST_P(CodeGrid, WeightedWithUniformImportanceIsNoWorseThanTheReference) {
  const int64_t blocks = 200, n = blocks * t().block_size;
  const auto x = test_row(t(), blocks, 17);
  const auto y_ref = dequantize(t(), quantize(t(), x), n);
  const std::vector<float> ones(static_cast<size_t>(n), 1.0f), constant(static_cast<size_t>(n), 3.5f);
  for (const float* imp : {static_cast<const float*>(nullptr), ones.data(), constant.data()}) {
    const auto q = quantize_weighted(t(), x, imp);
    const auto y = dequantize(t(), q, n);
    for (float v : y) ASSERT_TRUE(std::isfinite(v)) << t().name;
    double e = 0, e_ref = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      const double eb = weighted_error(x, y, nullptr, b * t().block_size, t().block_size);
      const double eb_ref = weighted_error(x, y_ref, nullptr, b * t().block_size, t().block_size);
      // Per block: importance proportional to 1 ranks blocks exactly as the plain error does.
      ASSERT_LE(eb, eb_ref * (1 + 1e-9)) << t().name << " block " << b;
      e += eb;
      e_ref += eb_ref;
    }
    EXPECT_LE(e, e_ref) << t().name;
  }
}

TEST_P(CodeGrid, WeightedWithSkewedImportanceBeatsTheReference) {
  const int64_t blocks = 200, n = blocks * t().block_size;
  const auto x = test_row(t(), blocks, 19);
  // Importance spanning six decades (activation energy per column is this uneven in real models).
  // Measured weighted/reference error: q8_0 0.81, q4_0 0.69, q5_0 0.73, q4_1 0.19, q5_1 0.18, q2_K 0.20,
  // q3_K 0.45, q4_K 0.52, q5_K 0.64, q6_K 0.60 (uniform importance: 0.43 .. 0.96).
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> decades(-3.0f, 3.0f);
  std::vector<float> imp(static_cast<size_t>(n));
  for (float& v : imp) v = std::pow(10.0f, decades(rng));
  const auto y_ref = dequantize(t(), quantize(t(), x), n);
  const auto y = dequantize(t(), quantize_weighted(t(), x, imp.data()), n);
  const double e = weighted_error(x, y, &imp, 0, n), e_ref = weighted_error(x, y_ref, &imp, 0, n);
  EXPECT_LT(e, 0.9 * e_ref) << t().name << ": weighted error " << e << " vs reference " << e_ref;
  // Never worse per block either (the reference is one of the candidates).
  for (int64_t b = 0; b < blocks; ++b)
    ASSERT_LE(weighted_error(x, y, &imp, b * t().block_size, t().block_size),
              weighted_error(x, y_ref, &imp, b * t().block_size, t().block_size) * (1 + 1e-9))
        << t().name << " block " << b;
}

TEST_P(CodeGrid, WeightedIgnoresZeroImportanceBlocks) {
  // A block whose importance is all zero has nothing to optimise: it gets the reference bytes.
  const int64_t n = t().block_size;
  const auto x = test_row(t(), 1, 29);
  const std::vector<float> zeros(static_cast<size_t>(n), 0.0f);
  EXPECT_EQ(quantize_weighted(t(), x, zeros.data()), quantize(t(), x)) << t().name;
}

INSTANTIATE_TEST_SUITE_P(Types, CodeGrid, ::testing::ValuesIn(kQuantized),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

}  // namespace
}  // namespace tinfer

// pack_matrix / unpack_row: round trips against the type table's dequantizer, errors for bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "tinfer/error.h"
#include "core/isa.h"
#include "kernels/kernel_table.h"
#include "kernels/kernel_test_util.h"
#include "kernels/kernels.h"

namespace tinfer {
namespace {

class PackTest : public ::testing::TestWithParam<DType> {};

TEST_P(PackTest, UnpackRowRoundTrips) {
  const DType type = GetParam();
  const auto& tt = type_traits(type);
  const int64_t rows = 37, cols = (tt.block_size == 1 ? 32 : tt.block_size) * 3;
  const auto w = test::random_weights(type, rows, cols, 42);
  const PackedMatrix pw = pack_matrix(type, w.data(), rows, cols);
  EXPECT_EQ(pw.rows, rows);
  EXPECT_EQ(pw.cols, cols);
  std::vector<float> got(static_cast<size_t>(cols)), want(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    unpack_row(pw, r, got.data());
    tt.to_float(w.data() + row_bytes(type, cols) * size_t(r), want.data(), cols);
    for (int64_t c = 0; c < cols; ++c)
      ASSERT_NEAR(got[size_t(c)], want[size_t(c)], 1e-6 * std::fabs(want[size_t(c)]) + 1e-9)
          << tt.name << " r=" << r << " c=" << c;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, PackTest,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0,
                                           DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                                           DType::Q4_K, DType::Q5_K, DType::Q6_K),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

TEST(PackErrors, RejectsUnsupportedTypesAndRaggedRows) {
  std::vector<uint8_t> buf(4096);
  EXPECT_THROW(pack_matrix(DType(9), buf.data(), 1, 32), Error);  // Q8_1: not a weight type
  EXPECT_THROW(pack_matrix(DType::Q8_0, buf.data(), 1, 40), Error);  // not a multiple of 32
  EXPECT_THROW(pack_matrix(DType::Q8_0, buf.data(), 0, 32), Error);
}

}  // namespace
}  // namespace tinfer

namespace tinfer {
namespace {

// The per-ISA fast row dequantizers (used by matmul for the row-layout types) vs the type table.
TEST(FastDequant, EveryIsaMatchesTypeTable) {
  for (DType type : {DType::F16, DType::BF16}) {
    const auto& tt = type_traits(type);
    const int64_t cols = tt.block_size == 1 ? 77 : tt.block_size * 3;
    auto w = test::random_weights(type, 1, cols, 9);
    if (type == DType::F16) {  // add the special halves: subnormal, inf, -0
      auto* h = reinterpret_cast<uint16_t*>(w.data());
      h[0] = 0x0001, h[1] = 0x03ff, h[2] = 0x7c00, h[3] = 0x8000, h[4] = 0xfc00;
    }
    std::vector<float> want(static_cast<size_t>(cols)), got(want.size());
    tt.to_float(w.data(), want.data(), cols);
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(testing::Message() << tt.name << " " << isa_name(isa));
      ASSERT_TRUE(kernel_table(isa).dequant_row(type, w.data(), got.data(), cols));
      for (int64_t c = 0; c < cols; ++c) {
        const float g = got[size_t(c)], e = want[size_t(c)];
        ASSERT_TRUE(g == e || std::fabs(g - e) <= 1e-6 * std::fabs(e) + 1e-12) << "c=" << c << " " << g << " vs " << e;
        ASSERT_EQ(std::signbit(g), std::signbit(e)) << "c=" << c;
      }
    }
  }
}

}  // namespace
}  // namespace tinfer

// pack_matrix over stacked parts on a pool: byte-identical to packing the concatenated rows on one thread,
// for every type, ragged part sizes (tiles spanning part boundaries) and pool sizes.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "kernels/kernel_test_util.h"
#include "kernels/pack.h"
#include "quant/type_table.h"

namespace tinfer {
namespace {

class PackParallelTest : public ::testing::TestWithParam<DType> {};

TEST_P(PackParallelTest, StackedPartsOnAPoolEqualOneThreadOnTheJoinedRows) {
  const DType type = GetParam();
  const auto& tt = type_traits(type);
  const int64_t cols = (tt.block_size == 1 ? 32 : tt.block_size) * 5;
  const size_t rb = row_bytes(type, cols);
  for (const std::vector<int64_t>& rows : {std::vector<int64_t>{1}, {37}, {21, 50, 3}, {16, 16}, {5, 200}}) {
    std::vector<std::vector<uint8_t>> w;
    std::vector<uint8_t> joined;
    std::vector<PackPart> parts;
    int64_t total = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      w.push_back(test::random_weights(type, rows[i], cols, 100 + uint64_t(i)));
      joined.insert(joined.end(), w.back().begin(), w.back().end());
      total += rows[i];
    }
    for (size_t i = 0; i < rows.size(); ++i) parts.push_back({w[i].data(), rows[i]});
    ASSERT_EQ(joined.size(), rb * size_t(total));
    const PackedMatrix want = pack_matrix(type, joined.data(), total, cols);
    for (int threads : {1, 2, 3, 7}) {
      ThreadPool pool(threads);
      const PackedMatrix got = pack_matrix(type, parts, cols, &pool);
      EXPECT_EQ(got.rows, total);
      EXPECT_EQ(got.cols, cols);
      ASSERT_EQ(got.data.size(), want.data.size());
      EXPECT_EQ(std::memcmp(got.data.data(), want.data.data(), want.data.size()), 0)
          << tt.name << " threads " << threads << " parts " << rows.size() << " rows " << total;
    }
    const PackedMatrix inline_pack = pack_matrix(type, parts, cols, nullptr);
    EXPECT_EQ(std::memcmp(inline_pack.data.data(), want.data.data(), want.data.size()), 0) << tt.name << " no pool";
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, PackParallelTest,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0,
                                           DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                                           DType::Q4_K, DType::Q5_K, DType::Q6_K),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

TEST(PackParallelErrors, RejectsEmptyAndMissingParts) {
  ThreadPool pool(2);
  std::vector<PackPart> none;
  EXPECT_THROW(pack_matrix(DType::Q8_0, none, 32, &pool), Error);
  std::vector<PackPart> hole{{nullptr, 4}};
  EXPECT_THROW(pack_matrix(DType::Q8_0, hole, 32, &pool), Error);
}

}  // namespace
}  // namespace tinfer

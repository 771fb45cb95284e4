// matmul on every ISA and type vs the reference kernels, on ragged shapes (rows not a multiple of
// the 16-row tile, odd block counts, odd activation row counts) with the reference quantizers' weights.
// (packed_format_test.cpp covers every packed format with random blocks on more shapes.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "core/isa.h"
#include "core/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/kernel_test_util.h"
#include "kernels/kernels.h"
#include "kernels/packed_format.h"
#include "kernels/ref/ref_kernels.h"

namespace tinfer {
namespace {

// Bound on NMSE vs the fp32-activation reference. The 32-block types quantize activations to int8
// (step amax/127 per block): for Gaussian data the expected NMSE is ~3e-5 (shapes with fewer than 16
// outputs are not held to it: one output near 0 makes any NMSE), so 5e-4; a wrong scale or offset gives
// >1e-2, and the exact int8 path is checked far tighter below. The others run fp32 dots (fp32-vs-double only): 1e-9.
double nmse_tolerance(DType t) { return packed::find_format(t) ? 5e-4 : 1e-9; }
// BF16 weights in batches on a table with bf16 dot products round the activations to bf16 (relative
// error <= 2^-8, about uniform within half an ulp: expected NMSE ~ 2e-6..5e-6); bf16_gemm_test.cpp
// holds that path to a per-output bound.
constexpr double kBf16ActNmse = 2e-5;
// Bound on max error / rms vs the reference that quantizes activations the same way: the int dots
// are exact, so only fp32 accumulation over the blocks (plus one rounding of d_w * d_a) remains.
constexpr double kQActTolerance = 1e-5;

struct Shape {
  int64_t rows, blocks, m;
};

class MatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTest, MatchesReferenceOnEveryIsa) {
  const DType type = GetParam();
  const auto& tt = type_traits(type);
  const int64_t bs = tt.block_size == 1 ? 32 : tt.block_size;  // float types: any width; use 32-steps
  const bool tiled = packed::find_format(type) != nullptr;
  std::vector<Shape> shapes = {{1, 1, 1}, {17, 3, 1}, {17, 3, 2}, {17, 3, 3}, {31, 5, 5},
                               {33, 3, 7}, {16, 7, 16}, {45, 33, 33}, {5, 9, 70},
                               // several L1 slices of blocks (8 for Q8_0, 16 for Q4) with a ragged last
                               // slice, then a full and a partial activation group sharing each slice
                               {20, 17, 12}, {18, 40, 9}};
  if (tt.block_size == 1) shapes.push_back({7, 1, 3});  // cols = 32 + odd tail below
  ThreadPool pool(2);
  for (const Shape& s : shapes) {
    const int64_t cols = s.blocks * bs + (tt.block_size == 1 ? 3 : 0);  // float types: ragged tail
    const auto w = test::random_weights(type, s.rows, cols, uint32_t(s.rows * 131 + cols));
    const auto x = test::random_floats(size_t(s.m * cols), uint32_t(s.m * 7 + cols));
    std::vector<float> want(static_cast<size_t>(s.m * s.rows)), want_q(want.size());
    ref::matmul(type, w.data(), s.rows, cols, x.data(), s.m, want.data());
    if (tiled) ref::matmul_qact(type, w.data(), s.rows, cols, x.data(), s.m, want_q.data());
    const PackedMatrix pw = pack_matrix(type, w.data(), s.rows, cols);
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(testing::Message() << tt.name << " isa=" << isa_name(isa) << " rows=" << s.rows
                                      << " cols=" << cols << " m=" << s.m);
      std::vector<float> got(want.size(), -1e30f);
      matmul(pw, x.data(), s.m, got.data(), pool, kernel_table(isa));
      // (For the int8 path a statistical bound: a single output may sit near 0, e.g. q2_k at 1x1x1.)
      if (!tiled || got.size() >= 16) {
        const bool bf16_acts = type == DType::BF16 && s.m > 1 && kernel_table(isa).bf16_gemm;
        EXPECT_LT(test::nmse(got.data(), want.data(), got.size()), bf16_acts ? kBf16ActNmse : nmse_tolerance(type));
      }
      if (tiled) {
        EXPECT_LT(test::max_err_over_rms(got.data(), want_q.data(), got.size()), kQActTolerance);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTest,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0,
                                           DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                                           DType::Q4_K, DType::Q5_K, DType::Q6_K),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

TEST(MatmulTest, SingleThreadPoolGivesSameResult) {
  const int64_t rows = 37, cols = 96, m = 3;
  const auto w = test::random_weights(DType::Q8_0, rows, cols, 5);
  const auto x = test::random_floats(size_t(m * cols), 6);
  const PackedMatrix pw = pack_matrix(DType::Q8_0, w.data(), rows, cols);
  ThreadPool p1(1), p2(2);
  std::vector<float> a(static_cast<size_t>(m * rows)), b(a.size());
  matmul(pw, x.data(), m, a.data(), p1);
  matmul(pw, x.data(), m, b.data(), p2);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

// Decode (m < 8) splits the tiles into one contiguous run per thread, and threads that finish steal
// from the back of the others' runs. Whoever computes a tile, every output is computed exactly once
// by the same code, so results are bit-identical across pool sizes (3 and 5 threads oversubscribe a
// 2-core machine, so steals happen) and repeated runs, and match the reference.
TEST(MatmulTest, DecodeSplitComputesEveryTileOnce) {
  const int64_t rows = 16 * 67 + 5, cols = 64;
  for (DType type : {DType::Q8_0, DType::Q4_0, DType::Q4_1}) {
    const auto w = test::random_weights(type, rows, cols, 9);
    const PackedMatrix pw = pack_matrix(type, w.data(), rows, cols);
    for (int64_t m : {1, 3}) {
      SCOPED_TRACE(testing::Message() << type_traits(type).name << " m=" << m);
      const auto x = test::random_floats(size_t(m * cols), 10);
      std::vector<float> want(static_cast<size_t>(m * rows)), first(want.size(), -1e30f);
      ref::matmul_qact(type, w.data(), rows, cols, x.data(), m, want.data());
      ThreadPool p1(1);
      matmul(pw, x.data(), m, first.data(), p1);
      EXPECT_LT(test::max_err_over_rms(first.data(), want.data(), first.size()), kQActTolerance);
      for (int threads : {2, 3, 5}) {
        ThreadPool pool(threads);
        for (int rep = 0; rep < 20; ++rep) {
          std::vector<float> got(want.size(), -1e30f);
          matmul(pw, x.data(), m, got.data(), pool);
          ASSERT_EQ(0, std::memcmp(got.data(), first.data(), got.size() * sizeof(float))) << threads << " threads";
        }
      }
    }
  }
}

// AVX-512 batches (4+ rows) of the 32-element-scale formats take the weight tiles in pairs (one activation
// broadcast feeds two tiles' dots); decode takes them one at a time. Both sum the same exact int dots and fold
// them in the same order, so each row of a batch equals that row alone, bit for bit: a pair that mixed up its
// tiles' sums, scales or outputs would not. Ragged: 3 full tiles + 9 rows (an odd tile left alone), 3 groups
// with 4 + 4, 4 + 2 + 1 and 4 + 1 rows.
TEST(MatmulTest, PairedTilesEqualRowsAloneBitExactly) {
  const auto isas = supported_isas();
  if (std::find(isas.begin(), isas.end(), Isa::avx512) == isas.end())
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI: the paired-tile kernel cannot run here";
  const int64_t rows = 16 * 3 + 9, cols = 32 * 11, m = 21;
  ThreadPool pool(2);
  for (DType type : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1}) {
    SCOPED_TRACE(type_traits(type).name);
    const auto w = test::random_weights(type, rows, cols, 21);
    const auto x = test::random_floats(size_t(m * cols), 22);
    const PackedMatrix pw = pack_matrix(type, w.data(), rows, cols);
    std::vector<float> batch(size_t(m * rows), -1e30f), alone(size_t(rows), -1e30f);
    matmul(pw, x.data(), m, batch.data(), pool, kernel_table(Isa::avx512));
    for (int64_t i = 0; i < m; ++i) {
      matmul(pw, x.data() + i * cols, 1, alone.data(), pool, kernel_table(Isa::avx512));
      ASSERT_EQ(0, std::memcmp(alone.data(), batch.data() + i * rows, alone.size() * sizeof(float))) << "row " << i;
    }
  }
}

// Batches likewise: whichever thread computes a tile, and whether its work item paired it with a neighbour
// (AVX-512) or not, the bits are the same. 1, 2, 3 and 5 threads cut the 14 tiles at different, odd and even,
// boundaries; m = 70 takes the prefill split (two activation chunks).
TEST(MatmulTest, BatchSplitIsBitIdenticalAcrossPoolSizes) {
  const int64_t rows = 16 * 13 + 5, cols = 512;
  for (DType type : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                     DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const auto w = test::random_weights(type, rows, cols, 31);
    const PackedMatrix pw = pack_matrix(type, w.data(), rows, cols);
    for (int64_t m : {5, 13, 21, 70}) {
      SCOPED_TRACE(testing::Message() << type_traits(type).name << " m=" << m);
      const auto x = test::random_floats(size_t(m * cols), 32);
      for (Isa isa : supported_isas()) {
        std::vector<float> first(size_t(m * rows), -1e30f);
        ThreadPool p1(1);
        matmul(pw, x.data(), m, first.data(), p1, kernel_table(isa));
        for (int threads : {2, 3, 5}) {
          ThreadPool pool(threads);
          std::vector<float> got(first.size(), -1e30f);
          matmul(pw, x.data(), m, got.data(), pool, kernel_table(isa));
          ASSERT_EQ(0, std::memcmp(got.data(), first.data(), got.size() * sizeof(float)))
              << isa_name(isa) << ", " << threads << " threads";
        }
      }
    }
  }
}

TEST(ActQuantTest, EveryIsaMatchesReferenceBitExactly) {
  const int64_t cols = 32 * 9;
  auto x = test::random_floats(size_t(cols), 11, 3.0f);
  for (int k = 64; k < 96; ++k) x[size_t(k)] = 0.0f;  // an all-zero block: d = 0 per block, q = 0
  x[5] = 127.0f / 2;                                  // ties: exact .5 multiples round to even
  x[200] = 127.0f;                                    // the row's amax: per token, x[5] is a tie too
  for (ActQuant mode : {ActQuant::block32, ActQuant::token}) {
    SCOPED_TRACE(act_quant_name(mode));
    std::vector<int8_t> q0(static_cast<size_t>(cols)), q1(static_cast<size_t>(cols));
    std::vector<float> d0(9), d1(9);
    std::vector<int16_t> s0(18), s1(18);
    ref::quantize_act_row(x.data(), cols, mode, q0.data(), d0.data(), s0.data());
    for (int b = 0; b < 9; ++b) {  // the half sums are the sums of q
      int lo = 0, hi = 0;
      for (int k = 0; k < 16; ++k) lo += q0[size_t(32 * b + k)], hi += q0[size_t(32 * b + 16 + k)];
      ASSERT_EQ(s0[size_t(2 * b)], lo);
      ASSERT_EQ(s0[size_t(2 * b + 1)], hi);
      if (mode == ActQuant::token) {
        ASSERT_EQ(d0[size_t(b)], 1.0f);  // amax 127 over the row
      }
    }
    EXPECT_EQ(q0[5], mode == ActQuant::token ? 64 : 127);  // 63.5 rounds to even
    for (Isa isa : supported_isas()) {
      SCOPED_TRACE(isa_name(isa));
      kernel_table(isa).quantize_act_row(x.data(), cols, mode, q1.data(), d1.data(), s1.data());
      EXPECT_EQ(q0, q1);
      EXPECT_EQ(d0, d1);
      EXPECT_EQ(s0, s1);
    }
  }
}

TEST(KernelTableTest, ForcedIsaTablesReportTheirIsa) {
  for (Isa isa : supported_isas()) EXPECT_EQ(kernel_table(isa).isa, isa);
  EXPECT_EQ(active_kernels().isa, active_isa());
}

}  // namespace
}  // namespace tinfer

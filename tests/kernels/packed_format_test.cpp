// Every packed format (packed_format.h) on every kernel table this CPU has, with random but valid GGUF
// blocks (random code bytes, small random fp16 scales): pack -> unpack_row equals the type table's to_float
// bit for bit, the packed size stays within a few % of the GGUF size, and the GEMM on ragged shapes
// matches (tightly) the reference computed from the dequantized weights and the same int8 activations,
// and (loosely) the double-precision product with the float activations.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/fp16.h"
#include "core/isa.h"
#include "core/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/kernel_test_util.h"
#include "kernels/kernels.h"
#include "kernels/packed_format.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/blocks.h"

namespace tinfer {
namespace {

// Random fp16 scale: magnitude in [0.5, 1.5] * mag, random sign.
uint16_t rand_scale(std::mt19937& rng, float mag) {
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  return f32_to_fp16((rng() & 1 ? -1.0f : 1.0f) * u(rng) * mag);
}

// Sets the fp16 fields of every block (random bytes elsewhere are valid codes and sub-block scales).
template <class Block>
void fix_scales(uint8_t* p, size_t n, std::mt19937& rng, float mag, uint16_t Block::*d, uint16_t Block::*m) {
  auto* b = reinterpret_cast<Block*>(p);
  for (size_t i = 0; i < n; ++i) {
    b[i].*d = rand_scale(rng, mag);
    if (m) b[i].*m = rand_scale(rng, mag);
  }
}

// GGUF bytes of a row of a packed format (its row's block size, so the tests do not need the type table).
size_t gguf_row_bytes(const packed::PackedFormat& f, int64_t cols) { return size_t(cols / f.g.block * f.gguf_bytes); }

std::vector<uint8_t> random_blocks(const packed::PackedFormat& f, int64_t rows, int64_t cols, uint32_t seed) {
  const DType t = f.type;
  std::vector<uint8_t> w(gguf_row_bytes(f, cols) * size_t(rows));
  std::mt19937 rng(seed);
  for (auto& b : w) b = uint8_t(rng());
  const size_t n = w.size() / size_t(f.gguf_bytes);
  // Magnitudes keep the weights O(0.01..1): the K-quants multiply d by sub-block scales up to 63/127.
  switch (t) {
    case DType::Q8_0: fix_scales<BlockQ8_0>(w.data(), n, rng, 1e-3f, &BlockQ8_0::d, nullptr); break;
    case DType::Q4_0: fix_scales<BlockQ4_0>(w.data(), n, rng, 1e-2f, &BlockQ4_0::d, nullptr); break;
    case DType::Q4_1: fix_scales<BlockQ4_1>(w.data(), n, rng, 1e-2f, &BlockQ4_1::d, &BlockQ4_1::m); break;
    case DType::Q5_0: fix_scales<BlockQ5_0>(w.data(), n, rng, 1e-2f, &BlockQ5_0::d, nullptr); break;
    case DType::Q5_1: fix_scales<BlockQ5_1>(w.data(), n, rng, 1e-2f, &BlockQ5_1::d, &BlockQ5_1::m); break;
    case DType::Q2_K: fix_scales<BlockQ2_K>(w.data(), n, rng, 1e-2f, &BlockQ2_K::d, &BlockQ2_K::dmin); break;
    case DType::Q3_K: fix_scales<BlockQ3_K>(w.data(), n, rng, 1e-3f, &BlockQ3_K::d, nullptr); break;
    case DType::Q4_K: fix_scales<BlockQ4_K>(w.data(), n, rng, 1e-3f, &BlockQ4_K::d, &BlockQ4_K::dmin); break;
    case DType::Q5_K: fix_scales<BlockQ5_K>(w.data(), n, rng, 1e-3f, &BlockQ5_K::d, &BlockQ5_K::dmin); break;
    case DType::Q6_K: fix_scales<BlockQ6_K>(w.data(), n, rng, 1e-4f, &BlockQ6_K::d, nullptr); break;
    default: ADD_FAILURE() << "no random block generator for type " << int(t);
  }
  return w;
}

// The reference dequantizer of a format's type: the type table's to_float (null while the quant library
// has no row for the type).
using ToFloat = void (*)(const void*, float*, int64_t);
ToFloat reference_to_float(const packed::PackedFormat& f) {
  const TypeTraits* tt = find_type(f.type);
  return tt ? tt->to_float : nullptr;
}
std::string name(const packed::PackedFormat& f) {
  const TypeTraits* tt = find_type(f.type);
  return tt ? tt->name : "type " + std::to_string(int(f.type));
}

// rows x cols oracle weights: the reference to_float of the GGUF rows, or (without one) unpack_row.
std::vector<float> oracle_weights(const packed::PackedFormat& f, const std::vector<uint8_t>& w, const PackedMatrix& pw) {
  std::vector<float> out(size_t(pw.rows * pw.cols));
  const ToFloat to_float = reference_to_float(f);
  for (int64_t r = 0; r < pw.rows; ++r) {
    if (to_float) to_float(w.data() + gguf_row_bytes(f, pw.cols) * size_t(r), out.data() + r * pw.cols, pw.cols);
    else unpack_row(pw, r, out.data() + r * pw.cols);
  }
  return out;
}

TEST(PackedFormats, RowsDescribeTheirTypes) {
  for (const packed::PackedFormat& f : packed::kFormats) {
    SCOPED_TRACE(name(f));  // packed bytes per weight within 6% of GGUF (byte scales cost a little)
    EXPECT_EQ(packed::find_format(f.type), &f);
    EXPECT_EQ(f.g.block % packed::kSub, 0);
    EXPECT_EQ(f.g.scale_region() % packed::kLine, 0);
    EXPECT_GE(f.g.d_at, 0);
    if (const TypeTraits* tt = find_type(f.type)) {
      EXPECT_EQ(tt->block_size, f.g.block);
      EXPECT_EQ(tt->block_bytes, size_t(f.gguf_bytes));
    }
    const double packed_bytes = double(f.g.group_bytes()) / (f.g.group * packed::kTileRows);
    EXPECT_LE(packed_bytes, 1.06 * f.gguf_bytes);
    EXPECT_GE(packed_bytes, f.gguf_bytes);
  }
}

// Every packed type has its reference row in the type table (until it does, the GEMM tests use unpack_row
// as the oracle and the round trip below cannot be checked for it).
TEST(PackedFormats, EveryFormatHasAReferenceDequantizer) {
  for (const packed::PackedFormat& f : packed::kFormats)
    EXPECT_TRUE(reference_to_float(f)) << name(f) << ": no reference dequantizer in the type table";
}

TEST(PackedFormats, UnpackRowEqualsToFloatExactly) {
  for (const packed::PackedFormat& f : packed::kFormats) {
    const ToFloat to_float = reference_to_float(f);
    if (!to_float) continue;  // (EveryFormatHasAReferenceDequantizer fails)
    for (int64_t nb : {1, 2, 3, 5}) {
      const int64_t rows = 37, cols = nb * f.g.block;
      SCOPED_TRACE(testing::Message() << name(f) << " cols=" << cols);
      const auto w = random_blocks(f, rows, cols, uint32_t(7 * nb));
      const PackedMatrix pw = pack_matrix(f.type, w.data(), rows, cols);
      EXPECT_EQ(pw.data.size(), size_t(packed::n_tiles(rows) * f.g.tile_bytes(nb)));
      std::vector<float> got(static_cast<size_t>(cols)), want(got.size());
      for (int64_t r = 0; r < rows; ++r) {
        unpack_row(pw, r, got.data());
        to_float(w.data() + gguf_row_bytes(f, cols) * size_t(r), want.data(), cols);
        for (int64_t c = 0; c < cols; ++c)
          ASSERT_EQ(f32_to_bits(got[size_t(c)]), f32_to_bits(want[size_t(c)]))
              << "r=" << r << " c=" << c << " got " << got[size_t(c)] << " want " << want[size_t(c)];
      }
    }
  }
}

// Bound on max |error| / rms vs the reference with the same int8 activations: the int dots are exact, so
// only fp32 rounding of the scale products and of the accumulation over blocks remains.
constexpr double kQActTolerance = 1e-5;
// Bound on NMSE vs the double product with the float activations (int8 activation noise ~3e-5).
constexpr double kFloatTolerance = 5e-4;

struct Shape {
  int64_t rows, blocks, m;
};

TEST(PackedFormats, GemmMatchesReferenceOnEveryIsa) {
  // Rows not a multiple of 16; m covering the 8/4/2/1-row micro-kernels, a partial activation group,
  // a single-row group (decode) and two GEMM row chunks (m > 64); block counts odd and even, for formats
  // with two blocks per scale region.
  std::vector<Shape> shapes;
  for (int64_t m : {1, 2, 3, 5, 8, 9, 17, 64, 65}) shapes.push_back({17, 3, m});
  for (int64_t m : {1, 4, 13}) shapes.push_back({1, 1, m});
  for (int64_t m : {1, 7, 33}) shapes.push_back({45, 2, m});
  for (int64_t m : {1, 10}) shapes.push_back({33, 9, m});
  ThreadPool pool(2);
  for (const packed::PackedFormat& f : packed::kFormats) {
    for (const Shape& s : shapes) {
      const int64_t cols = s.blocks * f.g.block;
      const auto w = random_blocks(f, s.rows, cols, uint32_t(s.rows * 131 + cols));
      const auto x = test::random_floats(size_t(s.m * cols), uint32_t(s.m * 7 + cols));
      const PackedMatrix pw = pack_matrix(f.type, w.data(), s.rows, cols);
      // The references take GGUF rows; the dequantized weights are F32 rows.
      const std::vector<float> wf = oracle_weights(f, w, pw);
      std::vector<float> want(static_cast<size_t>(s.m * s.rows)), want_q(want.size());
      ref::matmul(DType::F32, wf.data(), s.rows, cols, x.data(), s.m, want.data());
      ref::matmul_qact(DType::F32, wf.data(), s.rows, cols, x.data(), s.m, want_q.data());
      for (Isa isa : supported_isas()) {
        SCOPED_TRACE(testing::Message() << name(f) << " isa=" << isa_name(isa) << " rows=" << s.rows
                                        << " cols=" << cols << " m=" << s.m);
        std::vector<float> got(want.size(), -1e30f);
        matmul(pw, x.data(), s.m, got.data(), pool, kernel_table(isa));
        EXPECT_LT(test::max_err_over_rms(got.data(), want_q.data(), got.size()), kQActTolerance);
        // (A statistical bound: meaningless for a handful of outputs, one of which may be near 0.)
        if (got.size() >= 16) {
          EXPECT_LT(test::nmse(got.data(), want.data(), got.size()), kFloatTolerance);
        }
      }
    }
  }
}

// Per-token activation quantization (one scale per row): every format on every ISA equals the reference
// that quantizes the activations the same way, and differs from the per-block result where a row has an
// outlier (so the option reaches the kernels).
TEST(PackedFormats, PerTokenActivationsMatchReferenceOnEveryIsa) {
  ThreadPool pool(2);
  for (const packed::PackedFormat& f : packed::kFormats) {
    for (const Shape& s : std::vector<Shape>{{17, 3, 1}, {33, 2, 9}, {20, 2, 65}}) {
      const int64_t cols = s.blocks * f.g.block;
      const auto w = random_blocks(f, s.rows, cols, uint32_t(s.rows * 17 + cols));
      auto x = test::random_floats(size_t(s.m * cols), uint32_t(s.m * 3 + cols));
      for (int64_t i = 0; i < s.m; ++i) x[size_t(i * cols + (i * 37) % cols)] = 40.0f;  // an outlier per row
      const PackedMatrix pw = pack_matrix(f.type, w.data(), s.rows, cols);
      const std::vector<float> wf = oracle_weights(f, w, pw);
      std::vector<float> want(static_cast<size_t>(s.m * s.rows)), want_block(want.size());
      ref::matmul_qact(DType::F32, wf.data(), s.rows, cols, x.data(), s.m, want.data(), ActQuant::token);
      ref::matmul_qact(DType::F32, wf.data(), s.rows, cols, x.data(), s.m, want_block.data(), ActQuant::block32);
      for (Isa isa : supported_isas()) {
        SCOPED_TRACE(testing::Message() << name(f) << " isa=" << isa_name(isa) << " rows=" << s.rows
                                        << " cols=" << cols << " m=" << s.m);
        std::vector<float> got(want.size(), -1e30f);
        matmul(pw, x.data(), s.m, got.data(), pool, kernel_table(isa), nullptr, Op::kMatmulQkv, ActQuant::token);
        EXPECT_LT(test::max_err_over_rms(got.data(), want.data(), got.size()), kQActTolerance);
        EXPECT_GT(test::max_err_over_rms(got.data(), want_block.data(), got.size()), 100 * kQActTolerance);
      }
    }
  }
}

}  // namespace
}  // namespace tinfer

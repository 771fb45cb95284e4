// Bit-exactness against fixtures made by gen_golden.py: gguf-py (an independent numpy implementation
// of the GGUF formats) for every dequantizer and the f32/f16/bf16/q8_0/q4_0/q4_1/q5_0/q5_1 quantizers.
// gguf-py has no K-quant quantizer: those fixtures come from float32 numpy ports of ggml's reference in
// gen_golden.py, a second implementation from the same source rather than an independent oracle (at
// development time they were also checked byte for byte against ggml's own quantize_row_*_ref).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "quant/type_table.h"
#include "quant_test_util.h"

namespace tinfer {
namespace {

const std::string kDataDir = std::string(TINFER_SOURCE_DIR) + "/tests/quant/data/";

// The fixture bytes, or an empty vector if the file is missing.
std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Layout: u32 n | first part | second part (see gen_golden.py). Returns n; fills the two parts.
int64_t split_fixture(const std::vector<uint8_t>& raw, const TypeTraits& t, bool floats_first,
                      std::vector<float>& floats, std::vector<uint8_t>& blocks) {
  uint32_t n = 0;
  if (raw.size() < 4) return -1;
  std::memcpy(&n, raw.data(), 4);
  const size_t fbytes = size_t(n) * 4, qbytes = row_bytes(t.type, n);
  EXPECT_EQ(raw.size(), 4 + fbytes + qbytes) << t.name;
  if (raw.size() != 4 + fbytes + qbytes) return -1;
  floats.resize(n);
  blocks.resize(qbytes);
  const uint8_t* p = raw.data() + 4;
  if (floats_first) {
    std::memcpy(floats.data(), p, fbytes);
    std::memcpy(blocks.data(), p + fbytes, qbytes);
  } else {
    std::memcpy(blocks.data(), p, qbytes);
    std::memcpy(floats.data(), p + qbytes, fbytes);
  }
  return n;
}

class Golden : public ::testing::TestWithParam<DType> {};

TEST_P(Golden, QuantizeMatchesFixture) {
  const TypeTraits& t = type_traits(GetParam());
  const auto raw = read_file(kDataDir + t.name + ".quant.bin");
  ASSERT_FALSE(raw.empty()) << "missing fixture " << kDataDir << t.name << ".quant.bin";
  std::vector<float> x;
  std::vector<uint8_t> expected;
  const int64_t n = split_fixture(raw, t, true, x, expected);
  ASSERT_GT(n, 0);
  const auto got = test::quantize(t, x);
  for (int64_t b = 0; b < n / t.block_size; ++b) {
    const size_t off = size_t(b) * t.block_bytes;
    ASSERT_EQ(0, std::memcmp(got.data() + off, expected.data() + off, t.block_bytes))
        << t.name << " block " << b << " differs (first input " << x[size_t(b * t.block_size)] << ")";
  }
}

TEST_P(Golden, DequantizeMatchesGgufPy) {
  const TypeTraits& t = type_traits(GetParam());
  const auto raw = read_file(kDataDir + t.name + ".dequant.bin");
  ASSERT_FALSE(raw.empty()) << "missing fixture " << kDataDir << t.name << ".dequant.bin";
  std::vector<float> expected;
  std::vector<uint8_t> blocks;
  const int64_t n = split_fixture(raw, t, false, expected, blocks);
  ASSERT_GT(n, 0);
  const auto got = test::dequantize(t, blocks, n);
  // Exact: both sides do the same fp32 products in the same order.
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[size_t(i)], expected[size_t(i)]) << t.name << " element " << i;
}

INSTANTIATE_TEST_SUITE_P(Types, Golden,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                                           DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                           DType::Q6_K),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

}  // namespace
}  // namespace tinfer

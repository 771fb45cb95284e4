// The type table's facts and lookups: ids and names, unknown types, row_bytes and its errors.
#include "quant/type_table.h"

#include <gtest/gtest.h>

#include <string>

#include "tinfer/error.h"

namespace tinfer {
namespace {

struct Expected {
  DType type;
  uint32_t gguf_id;
  const char* name;
  int64_t block_size;
  size_t block_bytes;
  int code_min, code_max;
};

// GGUF ids and block geometry as the GGUF spec / ggml define them; the code range of the stored integers.
constexpr Expected kExpected[] = {
    {DType::F32, 0, "f32", 1, 4, 0, 0},         {DType::F16, 1, "f16", 1, 2, 0, 0},
    {DType::BF16, 30, "bf16", 1, 2, 0, 0},      {DType::Q8_0, 8, "q8_0", 32, 34, -128, 127},
    {DType::Q4_0, 2, "q4_0", 32, 18, 0, 15},    {DType::Q4_1, 3, "q4_1", 32, 20, 0, 15},
    {DType::Q5_0, 6, "q5_0", 32, 22, 0, 31},    {DType::Q5_1, 7, "q5_1", 32, 24, 0, 31},
    {DType::Q2_K, 10, "q2_k", 256, 84, 0, 3},   {DType::Q3_K, 11, "q3_k", 256, 110, 0, 7},
    {DType::Q4_K, 12, "q4_k", 256, 144, 0, 15}, {DType::Q5_K, 13, "q5_k", 256, 176, 0, 31},
    {DType::Q6_K, 14, "q6_k", 256, 210, 0, 63},
};

TEST(TypeTable, RowsMatchTheGgufSpec) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(static_cast<uint32_t>(e.type), e.gguf_id);
    const TypeTraits* t = find_type(e.type);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, e.type);
    EXPECT_STREQ(t->name, e.name);
    EXPECT_EQ(t->block_size, e.block_size);
    EXPECT_EQ(t->block_bytes, e.block_bytes);
    EXPECT_NE(t->to_float, nullptr);
    EXPECT_NE(t->from_float, nullptr);
    EXPECT_EQ(&type_traits(e.type), t);
  }
}

// Quantized types carry the whole code grid; the float types none of it.
TEST(TypeTable, QuantizedRowsHaveTheCodeGrid) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    const TypeTraits& t = type_traits(e.type);
    EXPECT_EQ(t.code_min, e.code_min);
    EXPECT_EQ(t.code_max, e.code_max);
    const bool quantized = e.block_size > 1;
    EXPECT_EQ(t.from_float_weighted != nullptr, quantized);
    EXPECT_EQ(t.grid != nullptr, quantized);
    EXPECT_EQ(t.get_codes != nullptr, quantized);
    EXPECT_EQ(t.set_codes != nullptr, quantized);
  }
}

TEST(TypeTable, FindByName) {
  for (const Expected& e : kExpected) {
    const TypeTraits* t = find_type(std::string(e.name));
    ASSERT_NE(t, nullptr) << e.name;
    EXPECT_EQ(t->type, e.type);
  }
  EXPECT_EQ(find_type(std::string("q4_k_m")), nullptr) << "file-type names are not element types";
  EXPECT_EQ(find_type(std::string("iq4_nl")), nullptr);
  EXPECT_EQ(find_type(std::string("")), nullptr);
  EXPECT_EQ(find_type(std::string("Q8_0")), nullptr) << "names are lower case";
}

TEST(TypeTable, UnknownIds) {
  for (uint32_t id : {4u, 5u, 9u, 15u, 16u, 20u, 29u, 31u, 999u, 0xffffffffu}) {
    const auto t = static_cast<DType>(id);
    EXPECT_EQ(find_type(t), nullptr) << id;
    try {
      type_traits(t);
      ADD_FAILURE() << "type_traits accepted id " << id;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "unsupported tensor type id " + std::to_string(id));
    }
    EXPECT_THROW(row_bytes(t, 32), Error);
  }
}

TEST(TypeTable, RowBytes) {
  EXPECT_EQ(row_bytes(DType::F32, 7), 28u);
  EXPECT_EQ(row_bytes(DType::F16, 7), 14u);
  EXPECT_EQ(row_bytes(DType::BF16, 0), 0u);
  EXPECT_EQ(row_bytes(DType::Q8_0, 4096), 4096u / 32 * 34);
  EXPECT_EQ(row_bytes(DType::Q4_0, 64), 36u);
  EXPECT_EQ(row_bytes(DType::Q4_1, 96), 60u);
  EXPECT_EQ(row_bytes(DType::Q4_K, 4096), 16u * 144);
  EXPECT_EQ(row_bytes(DType::Q6_K, 256), 210u);
  EXPECT_EQ(row_bytes(DType::Q5_0, 64), 44u);
  EXPECT_EQ(row_bytes(DType::Q5_1, 96), 72u);
  EXPECT_EQ(row_bytes(DType::Q2_K, 512), 168u);
  EXPECT_EQ(row_bytes(DType::Q3_K, 4096), 16u * 110);
  EXPECT_EQ(row_bytes(DType::Q5_K, 768), 3u * 176);
  // 11008 = 43 super-blocks: a real FFN width.
  EXPECT_EQ(row_bytes(DType::Q6_K, 11008), 43u * 210);
}

TEST(TypeTable, RowBytesRejectsPartialBlocks) {
  for (auto [type, n] : {std::pair{DType::Q8_0, int64_t(33)},
                         {DType::Q4_0, 16},
                         {DType::Q4_1, 31},
                         {DType::Q4_K, 128},
                         {DType::Q6_K, 257},
                         {DType::Q5_0, 48},
                         {DType::Q5_1, 1},
                         {DType::Q2_K, 255},
                         {DType::Q3_K, 384},
                         {DType::Q5_K, 32}}) {
    try {
      row_bytes(type, n);
      ADD_FAILURE() << "accepted n=" << n;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(type_traits(type).name), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::to_string(n)), std::string::npos) << msg;
    }
  }
  EXPECT_THROW(row_bytes(DType::F32, -1), Error);
}

}  // namespace
}  // namespace tinfer

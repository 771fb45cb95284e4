// The type table rows (facts + reference (de)quantizers) and the lookups over them.
// Adding a type = one row here plus its family file; nothing else branches on DType.
#include "quant/type_table.h"

#include <array>

#include "tinfer/error.h"
#include "quant/blocks.h"
#include "quant/ref_quants.h"

namespace tinfer {
namespace {

namespace r = quant_ref;

// A quantized type's row: facts, reference pair, code range and code-grid functions, all named after it.
#define TINFER_QUANT_ROW(TYPE, name, block_size, Block)                                                              \
  TypeTraits {                                                                                                       \
    DType::TYPE, #name, block_size, sizeof(Block), r::name##_to_float, r::name##_from_float, r::name##_codes.min,    \
        r::name##_codes.max, r::name##_from_float_weighted, r::name##_grid, r::name##_get_codes, r::name##_set_codes \
  }

constexpr std::array<TypeTraits, 13> kTypes = {{
    {DType::F32, "f32", 1, 4, r::f32_to_float, r::f32_from_float},
    {DType::F16, "f16", 1, 2, r::f16_to_float, r::f16_from_float},
    {DType::BF16, "bf16", 1, 2, r::bf16_to_float, r::bf16_from_float},
    TINFER_QUANT_ROW(Q8_0, q8_0, kQK, BlockQ8_0),
    TINFER_QUANT_ROW(Q4_0, q4_0, kQK, BlockQ4_0),
    TINFER_QUANT_ROW(Q4_1, q4_1, kQK, BlockQ4_1),
    TINFER_QUANT_ROW(Q5_0, q5_0, kQK, BlockQ5_0),
    TINFER_QUANT_ROW(Q5_1, q5_1, kQK, BlockQ5_1),
    TINFER_QUANT_ROW(Q2_K, q2_k, kQK_K, BlockQ2_K),
    TINFER_QUANT_ROW(Q3_K, q3_k, kQK_K, BlockQ3_K),
    TINFER_QUANT_ROW(Q4_K, q4_k, kQK_K, BlockQ4_K),
    TINFER_QUANT_ROW(Q5_K, q5_k, kQK_K, BlockQ5_K),
    TINFER_QUANT_ROW(Q6_K, q6_k, kQK_K, BlockQ6_K),
}};

#undef TINFER_QUANT_ROW

}  // namespace

const TypeTraits* find_type(DType t) {
  for (const TypeTraits& row : kTypes)
    if (row.type == t) return &row;
  return nullptr;
}

const TypeTraits& type_traits(DType t) {
  const TypeTraits* row = find_type(t);
  if (!row) fail("unsupported tensor type id " + std::to_string(static_cast<uint32_t>(t)));
  return *row;
}

const TypeTraits* find_type(const std::string& name) {
  for (const TypeTraits& row : kTypes)
    if (name == row.name) return &row;
  return nullptr;
}

size_t row_bytes(DType t, int64_t n) {
  const TypeTraits& row = type_traits(t);
  // (Messages built only on failure: the step calls this per token.)
  if (n < 0) fail("negative element count " + std::to_string(n) + " for type " + row.name);
  if (n % row.block_size != 0)
    fail("row of " + std::to_string(n) + " elements is not a multiple of the " + row.name + " block size " +
         std::to_string(row.block_size));
  return static_cast<size_t>(n / row.block_size) * row.block_bytes;
}

}  // namespace tinfer

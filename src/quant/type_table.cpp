// The type table rows (facts + reference (de)quantizers) and the lookups over them.
// Adding a type = one row here plus its family file; nothing else branches on DType.
#include "quant/type_table.h"

#include <array>

#include "core/error.h"
#include "quant/blocks.h"
#include "quant/ref_quants.h"

namespace tinfer {
namespace {

namespace r = quant_ref;

constexpr std::array<TypeTraits, 8> kTypes = {{
    {DType::F32, "f32", 1, 4, r::f32_to_float, r::f32_from_float},
    {DType::F16, "f16", 1, 2, r::f16_to_float, r::f16_from_float},
    {DType::BF16, "bf16", 1, 2, r::bf16_to_float, r::bf16_from_float},
    {DType::Q8_0, "q8_0", kQK, sizeof(BlockQ8_0), r::q8_0_to_float, r::q8_0_from_float},
    {DType::Q4_0, "q4_0", kQK, sizeof(BlockQ4_0), r::q4_0_to_float, r::q4_0_from_float},
    {DType::Q4_1, "q4_1", kQK, sizeof(BlockQ4_1), r::q4_1_to_float, r::q4_1_from_float},
    {DType::Q4_K, "q4_k", kQK_K, sizeof(BlockQ4_K), r::q4_k_to_float, r::q4_k_from_float},
    {DType::Q6_K, "q6_k", kQK_K, sizeof(BlockQ6_K), r::q6_k_to_float, r::q6_k_from_float},
}};

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
  check(n >= 0, "negative element count " + std::to_string(n) + " for type " + row.name);
  check(n % row.block_size == 0, "row of " + std::to_string(n) + " elements is not a multiple of the " + row.name +
                                     " block size " + std::to_string(row.block_size));
  return static_cast<size_t>(n / row.block_size) * row.block_bytes;
}

}  // namespace tinfer

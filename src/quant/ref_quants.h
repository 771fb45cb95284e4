// Internal: the reference (de)quantizers and code-grid functions each type-family file defines;
// type_table.cpp puts them in rows. Signatures match TypeTraits (n elements, n % block_size == 0).
#pragma once
#include <cstdint>

namespace tinfer::quant_ref {

void f32_to_float(const void* src, float* dst, int64_t n);
void f32_from_float(const float* src, void* dst, int64_t n);
void f16_to_float(const void* src, float* dst, int64_t n);
void f16_from_float(const float* src, void* dst, int64_t n);
void bf16_to_float(const void* src, float* dst, int64_t n);
void bf16_from_float(const float* src, void* dst, int64_t n);

// The range of a quantized type's raw codes (TypeTraits::code_min / code_max).
struct CodeRange {
  int min, max;
};

// A quantized type: reference pair, code range and the four code-grid functions (code_grid.h).
#define TINFER_DECLARE_QUANT_TYPE(name, code_min, code_max)                                         \
  void name##_to_float(const void* src, float* dst, int64_t n);                                     \
  void name##_from_float(const float* src, void* dst, int64_t n);                                   \
  inline constexpr CodeRange name##_codes{code_min, code_max};                                      \
  void name##_from_float_weighted(const float* src, void* dst, int64_t n, const float* importance); \
  void name##_grid(const void* blocks, float* scale, float* offset, int64_t n);                     \
  void name##_get_codes(const void* blocks, int32_t* q, int64_t n);                                 \
  void name##_set_codes(void* blocks, const int32_t* q, int64_t n);

// Codes are the stored integers: Q8_0 the int8 itself, the others unsigned (the format's zero point,
// e.g. 8 for Q4_0 or 4 for Q3_K, sits in the grid's offset).
TINFER_DECLARE_QUANT_TYPE(q8_0, -128, 127)
TINFER_DECLARE_QUANT_TYPE(q4_0, 0, 15)
TINFER_DECLARE_QUANT_TYPE(q4_1, 0, 15)
TINFER_DECLARE_QUANT_TYPE(q5_0, 0, 31)
TINFER_DECLARE_QUANT_TYPE(q5_1, 0, 31)
TINFER_DECLARE_QUANT_TYPE(q2_k, 0, 3)
TINFER_DECLARE_QUANT_TYPE(q3_k, 0, 7)
TINFER_DECLARE_QUANT_TYPE(q4_k, 0, 15)
TINFER_DECLARE_QUANT_TYPE(q5_k, 0, 31)
TINFER_DECLARE_QUANT_TYPE(q6_k, 0, 63)

#undef TINFER_DECLARE_QUANT_TYPE

}  // namespace tinfer::quant_ref

// Internal: the reference (de)quantizers each type-family file defines; type_table.cpp puts them in rows.
// Signatures match TypeTraits::to_float / from_float (n elements, n % block_size == 0).
#pragma once
#include <cstdint>

namespace tinfer::quant_ref {

void f32_to_float(const void* src, float* dst, int64_t n);
void f32_from_float(const float* src, void* dst, int64_t n);
void f16_to_float(const void* src, float* dst, int64_t n);
void f16_from_float(const float* src, void* dst, int64_t n);
void bf16_to_float(const void* src, float* dst, int64_t n);
void bf16_from_float(const float* src, void* dst, int64_t n);

void q8_0_to_float(const void* src, float* dst, int64_t n);
void q8_0_from_float(const float* src, void* dst, int64_t n);
void q4_0_to_float(const void* src, float* dst, int64_t n);
void q4_0_from_float(const float* src, void* dst, int64_t n);
void q4_1_to_float(const void* src, float* dst, int64_t n);
void q4_1_from_float(const float* src, void* dst, int64_t n);

void q4_k_to_float(const void* src, float* dst, int64_t n);
void q4_k_from_float(const float* src, void* dst, int64_t n);
void q6_k_to_float(const void* src, float* dst, int64_t n);
void q6_k_from_float(const float* src, void* dst, int64_t n);

}  // namespace tinfer::quant_ref

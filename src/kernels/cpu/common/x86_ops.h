// The x86 vector operations that the shared AVX2 / AVX-512 kernel code (gemm_q.h, attention_pv.h) is
// written in, as one table: each operation's AVX-512 form and its AVX2 form side by side, the one for the
// widest vectors this translation unit is compiled for picked by the compiler's ISA macros (each ISA
// directory is compiled with its own flags, cmake/isa.cmake); internal linkage. Every operation is one
// intrinsic (or two), inline: the shared code compiles to the instructions each ISA spelled out before.
#pragma once
#include <immintrin.h>

#include <cstdint>

#if defined(__AVX512F__) && defined(__AVX512BW__)
#define ZMM_YMM(zmm, ymm) zmm
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define ZMM_YMM(zmm, ymm) ymm
#else
#error "x86_ops.h needs AVX2 (+FMA, F16C) or AVX-512 (F, BW)"
#endif

namespace tinfer {
namespace {

struct Simd {
  using I = ZMM_YMM(__m512i, __m256i);  // 16 / 8 int32 lanes (64 / 32 bytes)
  using F = ZMM_YMM(__m512, __m256);
  static constexpr int kL = ZMM_YMM(16, 8);  // lanes a vector: tile rows (GEMM), floats (attention)

  // Integers.
  static I load(const uint8_t* p) {
    return ZMM_YMM(_mm512_loadu_si512(p), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static I and_(I a, I b) { return ZMM_YMM(_mm512_and_si512, _mm256_and_si256)(a, b); }
  // a | (b & c)
  static I or_and(I a, I b, I c) {
    return ZMM_YMM(_mm512_ternarylogic_epi32(a, b, c, 0xF8), _mm256_or_si256(a, _mm256_and_si256(b, c)));
  }
  static I set1_8(char v) { return ZMM_YMM(_mm512_set1_epi8, _mm256_set1_epi8)(v); }
  static I set1_32(int v) { return ZMM_YMM(_mm512_set1_epi32, _mm256_set1_epi32)(v); }
  static I zero_i() { return ZMM_YMM(_mm512_setzero_si512, _mm256_setzero_si256)(); }
  // Shift left by S bits (right for S < 0) within 16-bit lanes: callers mask the bits they keep.
  template <int S>
  static I shl(I v) {
    if constexpr (S > 0) return ZMM_YMM(_mm512_slli_epi16, _mm256_slli_epi16)(v, S);
    else if constexpr (S < 0) return ZMM_YMM(_mm512_srli_epi16, _mm256_srli_epi16)(v, -S);
    else return v;
  }
  // Shifts within 32-bit lanes.
  template <int n>
  static I sll32(I v) { return ZMM_YMM(_mm512_slli_epi32, _mm256_slli_epi32)(v, n); }
  template <int n>
  static I sra32(I v) { return ZMM_YMM(_mm512_srai_epi32, _mm256_srai_epi32)(v, n); }
  template <int n>
  static I srl32(I v) { return ZMM_YMM(_mm512_srli_epi32, _mm256_srli_epi32)(v, n); }
  static I srl32_by(I v, __m128i n) { return ZMM_YMM(_mm512_srl_epi32, _mm256_srl_epi32)(v, n); }

  // Floats.
  static F cvt(I v) { return ZMM_YMM(_mm512_cvtepi32_ps, _mm256_cvtepi32_ps)(v); }
  static F mul(F a, F b) { return ZMM_YMM(_mm512_mul_ps, _mm256_mul_ps)(a, b); }
  static F fmadd(F a, F b, F c) { return ZMM_YMM(_mm512_fmadd_ps, _mm256_fmadd_ps)(a, b, c); }
  static F set1_f(float v) { return ZMM_YMM(_mm512_set1_ps, _mm256_set1_ps)(v); }
  static F bcast(const float* p) { return ZMM_YMM(_mm512_set1_ps(*p), _mm256_broadcast_ss(p)); }
  static F neg(F v) { return ZMM_YMM(_mm512_sub_ps(_mm512_setzero_ps(), v), _mm256_sub_ps(_mm256_setzero_ps(), v)); }
  static F loadu(const float* p) { return ZMM_YMM(_mm512_loadu_ps, _mm256_loadu_ps)(p); }
  static void storeu(float* p, F v) { ZMM_YMM(_mm512_storeu_ps, _mm256_storeu_ps)(p, v); }

  // Widening loads of kL values (p: their first byte).
  static F ph(const uint8_t* p) {  // fp16
    return ZMM_YMM(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
                   _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static I u8x(const uint8_t* p) {  // bytes, zero-extended to int32
    return ZMM_YMM(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
                   _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static I s8x(const uint8_t* p) {  // bytes, sign-extended to int32
    return ZMM_YMM(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
                   _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  // kL byte pairs to 16-bit lanes, sign- / zero-extended.
  static I pairs_s8(const uint8_t* p) {
    return ZMM_YMM(_mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
                   _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static I pairs_u8(const uint8_t* p) {
    return ZMM_YMM(_mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
                   _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
};

}  // namespace
}  // namespace tinfer

#undef ZMM_YMM

// Float-weight GEMM (F32, F16, BF16 weights in their GGUF row layout; fp32 activations, fp32 FMA
// accumulation), written once with the GCC vectors of vec.h and compiled per ISA (included after vec.h,
// internal linkage). Only the widening load differs per ISA: vcvtph2ps where the ISA has F16C, the
// exponent-rebias trick of dequant.h otherwise; BF16 is a 16-bit shift everywhere. Every conversion is
// exact, so the result differs from the fp64 reference by fp32 summation order only.
//
// Register tile: kR weight rows x M activation rows (M <= kM) of kW-lane accumulators, each weight vector
// converted once and used M times, each activation vector loaded once and used kR times:
//   AVX-512 (32 zmm): 4 x 6 = 24 accumulators + 4 weights + 1 activation; AVX2/SSE (16 regs): 4 x 2.
// Decode (M = 1) is 4 independent weight streams with one FMA per converted vector: memory-bound.
// Prefill loops activation rows inside weight rows, so a 4-row weight slice (4 x cols x 2 bytes for F16)
// is reread from L1/L2 by every 6-row activation step of the chunk rather than from DRAM.
#pragma once
#include <cstring>
#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "kernels/kernel_table.h"
#include "quant/dtype.h"

namespace tinfer {
namespace {

constexpr int kFloatR = 4;
constexpr int kFloatM = kW == 16 ? 6 : 2;

// kW weights starting at p, widened to fp32.
template <DType T>
inline vf wload(const uint8_t* p) {
  if constexpr (T == DType::F32) {
    return vload(reinterpret_cast<const float*>(p));
  } else if constexpr (T == DType::BF16) {
#if defined(__AVX512F__) && TINFER_VEC_FLOATS == 16
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return (vf)_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
#elif defined(__AVX2__) && TINFER_VEC_FLOATS == 8
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return (vf)_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
#else
    typedef uint16_t vh __attribute__((vector_size(kW * 2)));
    vh h;
    std::memcpy(&h, p, sizeof h);
    const vi bits = __builtin_convertvector(h, vi) << 16;
    vf f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
#endif
  } else {
    static_assert(T == DType::F16);
#if defined(__AVX512F__) && TINFER_VEC_FLOATS == 16
    return (vf)_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#elif defined(__F16C__) && TINFER_VEC_FLOATS == 8
    return (vf)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#else
    vf f;
    v_f16_to_f32(reinterpret_cast<const uint16_t*>(p), reinterpret_cast<float*>(&f), kW);
    return f;
#endif
  }
}

template <DType T>
inline float wscalar(const uint8_t* row, int64_t c) {
  if constexpr (T == DType::F32) {
    float f;
    std::memcpy(&f, row + 4 * c, 4);
    return f;
  } else {
    uint16_t h;
    std::memcpy(&h, row + 2 * c, 2);
    if constexpr (T == DType::F16) return f16_scalar(h);
    const uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
}

template <DType T>
constexpr int64_t welem() {
  return T == DType::F32 ? 4 : 2;
}

// y[i * ldy + r] = W[r] . x[i] for R weight rows (w: row 0, rb bytes apart) and M activation rows
// (x: row 0, cols floats apart).
template <DType T, int R, int M>
inline void float_tile(const uint8_t* w, int64_t rb, int64_t cols, const float* x, float* y, int64_t ldy) {
  vf acc[R][M];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) acc[r][i] = vf{};
  int64_t c = 0;
  for (; c + kW <= cols; c += kW) {
    vf wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = wload<T>(w + r * rb + c * welem<T>());
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      const vf xv = vload(x + i * cols + c);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][i] += wv[r] * xv;
    }
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < M; ++i) {
      float s = hsum(acc[r][i]);
      for (int64_t t = c; t < cols; ++t) s += wscalar<T>(w + r * rb, t) * x[i * cols + t];
      y[i * ldy + r] = s;
    }
}

// Rows [r0, r0 + R) against activation rows [i0, i1), in steps of kFloatM (the last one narrower).
template <DType T, int R>
inline void float_rows(const FloatGemmArgs& g, int64_t r, int64_t i0, int64_t i1) {
  const uint8_t* w = g.w + r * g.row_bytes;
  int64_t i = i0;
  for (; i + kFloatM <= i1; i += kFloatM)
    float_tile<T, R, kFloatM>(w, g.row_bytes, g.cols, g.x + i * g.cols, g.y + i * g.ldy + r, g.ldy);
  const int64_t left = i1 - i;
  const float* x = g.x + i * g.cols;
  float* y = g.y + i * g.ldy + r;
  if constexpr (kFloatM > 2) {
    switch (left) {
      case 5: return float_tile<T, R, 5>(w, g.row_bytes, g.cols, x, y, g.ldy);
      case 4: return float_tile<T, R, 4>(w, g.row_bytes, g.cols, x, y, g.ldy);
      case 3: return float_tile<T, R, 3>(w, g.row_bytes, g.cols, x, y, g.ldy);
      default: break;
    }
  }
  if (left == 2) float_tile<T, R, 2>(w, g.row_bytes, g.cols, x, y, g.ldy);
  if (left == 1) float_tile<T, R, 1>(w, g.row_bytes, g.cols, x, y, g.ldy);
}

// Decode (one activation row): row after row, so each thread reads one sequential stream (rows are
// contiguous), four accumulators over k for the FMA latency; x stays in L1. Software prefetch 512 B-2 KiB
// ahead lowered a TinyLlama F16 decode step from 31-32 to 25-28 GB/s (bench_matmul BM_DecodeStep): the
// hardware prefetcher already follows the stream.
template <DType T>
inline void float_gemv(const FloatGemmArgs& g, int64_t r0, int64_t r1, int64_t i) {
  const float* x = g.x + i * g.cols;
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* w = g.w + r * g.row_bytes;
    vf a0{}, a1{}, a2{}, a3{};
    int64_t c = 0;
    for (; c + 4 * kW <= g.cols; c += 4 * kW) {
      a0 += wload<T>(w + c * welem<T>()) * vload(x + c);
      a1 += wload<T>(w + (c + kW) * welem<T>()) * vload(x + c + kW);
      a2 += wload<T>(w + (c + 2 * kW) * welem<T>()) * vload(x + c + 2 * kW);
      a3 += wload<T>(w + (c + 3 * kW) * welem<T>()) * vload(x + c + 3 * kW);
    }
    for (; c + kW <= g.cols; c += kW) a0 += wload<T>(w + c * welem<T>()) * vload(x + c);
    float s = hsum((a0 + a1) + (a2 + a3));
    for (; c < g.cols; ++c) s += wscalar<T>(w, c) * x[c];
    g.y[i * g.ldy + r] = s;
  }
}

template <DType T>
void float_gemm_t(const FloatGemmArgs& g, int64_t r0, int64_t r1, int64_t i0, int64_t i1) {
  if (i1 - i0 == 1) return float_gemv<T>(g, r0, r1, i0);
  int64_t r = r0;
  for (; r + kFloatR <= r1; r += kFloatR) float_rows<T, kFloatR>(g, r, i0, i1);
  for (; r < r1; ++r) float_rows<T, 1>(g, r, i0, i1);
}

// The table entry: dispatches on the weight type (the caller, matmul, admits only F32, F16, BF16).
inline void v_float_gemm(const FloatGemmArgs& g, int64_t r0, int64_t r1, int64_t i0, int64_t i1) {
  switch (g.type) {
    case DType::F16: return float_gemm_t<DType::F16>(g, r0, r1, i0, i1);
    case DType::BF16: return float_gemm_t<DType::BF16>(g, r0, r1, i0, i1);
    default: return float_gemm_t<DType::F32>(g, r0, r1, i0, i1);
  }
}

}  // namespace
}  // namespace tinfer

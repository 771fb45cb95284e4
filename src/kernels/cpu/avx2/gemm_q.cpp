// AVX2 quantized GEMM on the 16-row tile layout (packed_layout.h), without VNNI: vpmaddubsw
// (u8 x s8 -> s16 pairs) + vpmaddwd(1) per k-quad, one 8-row half of each tile per pass.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/kernel_table.h"
#include "kernels/packed_layout.h"

namespace tinfer {
namespace {

enum class Kind { q8_0, q4_0, q4_1 };

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// u8 weights x s8 activations, 4-byte groups summed into int32 lanes. Q8_0 weights are q+128, which
// would overflow vpmaddubsw's s16, so they are turned back into signed q and multiplied as
// |q| x (a * sign q) (at most 2 * 127 * 127, no saturation); no offset correction is then needed.
template <Kind K>
inline __m256i dot4(__m256i w, __m256i a) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (K == Kind::q8_0) {
    const __m256i ws = _mm256_xor_si256(w, _mm256_set1_epi8(char(0x80)));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(ws), _mm256_sign_epi8(a, ws)), ones);
  } else {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), ones);
  }
}

// Rows [i, i + MR) of y for one half (h: rows 8h..8h+7) of one tile. Q4_0 starts from a.off (-8 * sum);
// Q8_0 needs no offset here (see dot4).
template <Kind K, int MR>
inline void half_rows(const uint8_t* tile, const QActs& a, int64_t g, int r0, int h, float* y, int64_t ldy,
                      int valid) {
  constexpr DType type = K == Kind::q8_0 ? DType::Q8_0 : K == Kind::q4_0 ? DType::Q4_0 : DType::Q4_1;
  const int64_t nb = a.nb;
  const __m256i lo4 = _mm256_set1_epi8(0x0f);
  __m256 facc[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) facc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = tile + packed::quant_offset(type, b) + 32 * h;
    const auto* scales = reinterpret_cast<const uint16_t*>(tile + packed::scale_offset(type, b));
    const __m256 wd = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 8 * h)));
    const uint8_t* blk = a.block(g, b);
    __m256i acc[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
      acc[r] = K == Kind::q4_0 ? _mm256_set1_epi32(*a.off(blk, r0 + r)) : _mm256_setzero_si256();
    if constexpr (K == Kind::q8_0) {
#pragma GCC unroll 16
      for (int j = 0; j < 8; ++j) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + 64 * j));
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r)
          acc[r] = _mm256_add_epi32(acc[r], dot4<K>(w, bcast4(a.q(blk, r0 + r) + 4 * j)));
      }
    } else {
#pragma GCC unroll 16
      for (int c = 0; c < 4; ++c) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + 64 * c));
        const __m256i wl = _mm256_and_si256(v, lo4), wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo4);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
          const int8_t* q = a.q(blk, r0 + r);
          acc[r] = _mm256_add_epi32(acc[r], _mm256_add_epi32(dot4<K>(wl, bcast4(q + 4 * c)),
                                                             dot4<K>(wh, bcast4(q + 16 + 4 * c))));
        }
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      facc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[r]), _mm256_mul_ps(wd, _mm256_set1_ps(*a.d(blk, r0 + r))), facc[r]);
      if constexpr (K == Kind::q4_1) {
        const __m256 wm =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16 + 8 * h)));
        facc[r] = _mm256_fmadd_ps(wm, _mm256_set1_ps(*a.ds(blk, r0 + r)), facc[r]);
      }
    }
  }
  const int n = std::clamp(valid - 8 * h, 0, 8);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    float tmp[8];
    _mm256_storeu_ps(tmp, facc[r]);
    std::memcpy(y + (g * kActGroup + r0 + r) * ldy + 8 * h, tmp, sizeof(float) * size_t(n));
  }
}

template <Kind K>
void gemm(const GemmArgs& ga, int64_t t0, int64_t t1, int64_t i0, int64_t i1) {
  constexpr int kMR = 4;
  for (int64_t t = t0; t < t1; ++t) {
    const int valid = int(std::min<int64_t>(packed::kTileRows, ga.rows - t * packed::kTileRows));
    const uint8_t* tile = ga.w + t * ga.tile_bytes;
    float* y = ga.y + t * packed::kTileRows;
    for (int h = 0; h < 2 && 8 * h < valid; ++h) {
      for (int64_t g = i0 / kActGroup; g * kActGroup < i1; ++g) {
        const int n = int(std::min<int64_t>(kActGroup, i1 - g * kActGroup));
        int r0 = 0;
        for (; r0 + kMR <= n; r0 += kMR) half_rows<K, kMR>(tile, ga.a, g, r0, h, y, ga.ldy, valid);
        if (n - r0 >= 2) { half_rows<K, 2>(tile, ga.a, g, r0, h, y, ga.ldy, valid); r0 += 2; }
        if (n - r0 >= 1) half_rows<K, 1>(tile, ga.a, g, r0, h, y, ga.ldy, valid);
      }
    }
  }
}

}  // namespace

GemmFn avx2_gemm_q8_0() { return gemm<Kind::q8_0>; }
GemmFn avx2_gemm_q4_0() { return gemm<Kind::q4_0>; }
GemmFn avx2_gemm_q4_1() { return gemm<Kind::q4_1>; }

}  // namespace tinfer

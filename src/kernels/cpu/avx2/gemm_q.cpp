// AVX2 quantized GEMM on the 16-row tile layout (packed_layout.h), one instantiation per packed format
// (templated on its Geometry), without VNNI: vpmaddubsw (u8 x s8 -> s16 pairs) + vpmaddwd(1) per k-quad,
// one 8-row half of each tile per pass (bytes 32h..32h+31 of every 64-byte plane). The code unpack and the
// scale arithmetic are the AVX-512 kernel's, shared in common/gemm_q.h.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/cpu/common/gemm_q.h"
#include "kernels/cpu/common/x86_ops.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_format.h"

namespace tinfer {
namespace {

using packed::Geometry;
using packed::Scales;

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// u8 codes x s8 activations, 4-byte groups summed into int32 lanes. Q8_0 codes are q+128, which
// would overflow vpmaddubsw's s16, so they are turned back into signed q and multiplied as
// |q| x (a * sign q) (at most 2 * 127 * 127, no saturation); no offset correction is then needed.
// Narrower codes (<= 63) cannot saturate: 2 * 63 * 127 < 32767.
template <int bits>
inline __m256i dot4(__m256i w, const int8_t* x) {
  const __m256i ones = _mm256_set1_epi16(1), a = bcast4(x);
  if constexpr (bits == 8) {
    const __m256i ws = _mm256_xor_si256(w, _mm256_set1_epi8(char(0x80)));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(ws), _mm256_sign_epi8(a, ws)), ones);
  } else {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), ones);
  }
}

// common/gemm_q.h's operations: x86_ops.h's at 8 lanes (one ymm holds 8 rows, half a tile), and dot4.
struct Ymm : Simd {
  static constexpr bool kQ8Signed = true;  // dot4 multiplies Q8_0's codes as signed q
  template <int bits>
  static I dot(I acc, I w, const int8_t* x) { return _mm256_add_epi32(acc, dot4<bits>(w, x)); }
};
using V = Ymm;

// Rows [r0, r0 + MR) of activation group g against half `half` (rows 8h..8h+7) of one tile, all blocks;
// writes y.
template <Geometry G, int MR>
inline void half_rows(const uint8_t* tile, const QActs& a, int64_t g, int r0, int half, float* y, int64_t ldy,
                      int valid) {
  const int64_t nb = a.nb / G.subs();
  __m256 facc[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) facc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = tile + G.quant_offset(b) + 32 * half;
    const BlockScales<V, G> bs(tile + G.scale_offset(b), half);
    for (int s = 0; s < G.subs(); ++s) {
      const uint8_t* q = qb + s * G.sub_bytes();
      const uint8_t* blk = a.block(g, b * G.subs() + s);
      [[maybe_unused]] const SubScale<V> ss = bs.sub(s);  // (unused by the pair path)
      if constexpr (!G.sub16()) {
        __m256i acc[MR];
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) acc[r] = chain_init<V, G>(a, blk, r0 + r, 0);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          __m256i w[4];
          if (h == 0) unpack_half<V, G.bits, 0>(q, w);
          else unpack_half<V, G.bits, 1>(q, w);
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i)
#pragma GCC unroll 16
            for (int r = 0; r < MR; ++r)
              acc[r] = _mm256_add_epi32(acc[r], dot4<G.bits>(w[i], a.q(blk, r0 + r) + 16 * h + 4 * i));
        }
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) facc[r] = fold<V, G>(facc[r], acc[r], ss, a, blk, r0 + r, 0);
      } else if constexpr (MR > 1 && G.scales == Scales::k_scmn16) {
        // Q2_K: a row's two half dots fit 16 bits, so they are paired in 16-bit lanes and scaled by one
        // vpmaddwd with the rows' (lo, hi) scale pairs, the mins by one more, then one float fold per
        // sub-block (as the AVX-512 kernel).
        __m256i lo[MR], hi[MR];
        half_dots<V, G, MR, 0>(q, a, blk, r0, lo);
        half_dots<V, G, MR, 1>(q, a, blk, r0, hi);
        const __m256i pr = bs.pairs(s);
        const __m256i sc = _mm256_and_si256(pr, _mm256_set1_epi16(15)), mn = _mm256_srli_epi16(pr, 4);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
          const __m256i dots = _mm256_blend_epi16(lo[r], _mm256_slli_epi32(hi[r], 16), 0xAA);
          int32_t s16;
          std::memcpy(&s16, a.s16(blk, r0 + r), 4);
          __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(dots, sc)), bs.d);
          f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(mn, _mm256_set1_epi32(s16))), bs.m, f);
          facc[r] = _mm256_fmadd_ps(f, _mm256_set1_ps(*a.d(blk, r0 + r)), facc[r]);
        }
      } else {
        __m256i acc[MR];
        half_dots<V, G, MR, 0>(q, a, blk, r0, acc);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) facc[r] = fold<V, G>(facc[r], acc[r], ss, a, blk, r0 + r, 0);
        half_dots<V, G, MR, 1>(q, a, blk, r0, acc);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) facc[r] = fold<V, G>(facc[r], acc[r], ss, a, blk, r0 + r, 1);
      }
    }
  }
  const int n = std::clamp(valid - 8 * half, 0, 8);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    float tmp[8];
    _mm256_storeu_ps(tmp, facc[r]);
    std::memcpy(y + (g * kActGroup + r0 + r) * ldy + 8 * half, tmp, sizeof(float) * size_t(n));
  }
}

template <Geometry G>
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
        for (; r0 + kMR <= n; r0 += kMR) half_rows<G, kMR>(tile, ga.a, g, r0, h, y, ga.ldy, valid);
        if (n - r0 >= 2) { half_rows<G, 2>(tile, ga.a, g, r0, h, y, ga.ldy, valid); r0 += 2; }
        if (n - r0 >= 1) half_rows<G, 1>(tile, ga.a, g, r0, h, y, ga.ldy, valid);
      }
    }
  }
}

}  // namespace

std::array<GemmFn, packed::kNumFormats> avx2_gemms() {
  return gemms_per_format([]<Geometry G>() -> GemmFn { return gemm<G>; });
}

}  // namespace tinfer

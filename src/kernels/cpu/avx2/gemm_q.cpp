// AVX2 quantized GEMM on the 16-row tile layout (packed_layout.h), one instantiation per packed format
// (templated on its Geometry), without VNNI: vpmaddubsw (u8 x s8 -> s16 pairs) + vpmaddwd(1) per k-quad,
// one 8-row half of each tile per pass (bytes 32h..32h+31 of every 64-byte plane).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/kernel_table.h"
#include "kernels/packed_format.h"

namespace tinfer {
namespace {

using packed::Geometry;
using packed::Scales;

inline __m256i load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
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

template <int S>
inline __m256i shl(__m256i v) {
  if constexpr (S > 0) return _mm256_slli_epi16(v, S);
  else if constexpr (S < 0) return _mm256_srli_epi16(v, -S);
  else return v;
}
inline __m256i or_and(__m256i a, __m256i b, __m256i c) { return _mm256_or_si256(a, _mm256_and_si256(b, c)); }

// Quads 4h..4h+3 of one 8-row half of a sub-block's codes (q: the sub-block's first byte + 32 * half).
template <int bits, int h>
inline void unpack_half(const uint8_t* q, __m256i w[4]) {
  if constexpr (bits == 8) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) w[i] = load(q + 64 * (4 * h + i));
  } else if constexpr (bits == 6) {
    const __m256i m63 = _mm256_set1_epi8(63);
    if constexpr (h == 0) {
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) w[i] = _mm256_and_si256(load(q + 64 * i), m63);
    } else {  // quads 6, 7: the top 2 bits of planes 0-2 and 3-5
      w[0] = _mm256_and_si256(load(q + 256), m63);
      w[1] = _mm256_and_si256(load(q + 320), m63);
      const __m256i m3 = _mm256_set1_epi8(3), b23 = _mm256_set1_epi8(0x0c), b45 = _mm256_set1_epi8(0x30);
#pragma GCC unroll 2
      for (int i = 0; i < 2; ++i) {
        const uint8_t* p = q + 192 * i;
        w[2 + i] = or_and(or_and(_mm256_and_si256(shl<-6>(load(p)), m3), shl<-4>(load(p + 64)), b23),
                          shl<-2>(load(p + 128)), b45);
      }
    }
  } else if constexpr (bits == 5) {
    const __m256i m31 = _mm256_set1_epi8(31);
    if constexpr (h == 0) {
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) w[i] = _mm256_and_si256(load(q + 64 * i), m31);
    } else {  // quads 5-7: bits 0-2 atop planes 0-2, bits 3-4 atop planes 3-4
      const __m256i p3 = load(q + 192), p4 = load(q + 256), m7 = _mm256_set1_epi8(7);
      w[0] = _mm256_and_si256(p4, m31);
      w[1] = or_and(_mm256_and_si256(shl<-5>(load(q)), m7), shl<-2>(p3), _mm256_set1_epi8(0x18));
      w[2] = or_and(_mm256_and_si256(shl<-5>(load(q + 64)), m7), shl<-2>(p4), _mm256_set1_epi8(0x18));
      w[3] = or_and(or_and(_mm256_and_si256(shl<-5>(load(q + 128)), m7), shl<-4>(p3), _mm256_set1_epi8(0x08)),
                    shl<-3>(p4), _mm256_set1_epi8(0x10));
    }
  } else if constexpr (bits == 4) {
    const __m256i lo4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) w[i] = _mm256_and_si256(shl<-4 * h>(load(q + 64 * i)), lo4);
  } else if constexpr (bits == 3) {
    const __m256i m7 = _mm256_set1_epi8(7);
    const __m256i p = load(q + 64 * (2 * h)), p1 = load(q + 64 * (2 * h + 1));
    w[0] = _mm256_and_si256(p, m7);
    w[1] = _mm256_and_si256(shl<-3>(p), m7);
    if constexpr (h == 0) {
      w[2] = _mm256_and_si256(p1, m7);
      w[3] = _mm256_and_si256(shl<-3>(p1), m7);
    } else {
      const __m256i m3 = _mm256_set1_epi8(3), b2 = _mm256_set1_epi8(4);
      w[2] = or_and(_mm256_and_si256(shl<-6>(load(q)), m3), shl<-4>(p), b2);
      w[3] = or_and(_mm256_and_si256(shl<-6>(load(q + 64)), m3), shl<-5>(p), b2);
    }
  } else {
    const __m256i p = load(q + 64 * h), m3 = _mm256_set1_epi8(3);
    w[0] = _mm256_and_si256(p, m3);
    w[1] = _mm256_and_si256(shl<-2>(p), m3);
    w[2] = _mm256_and_si256(shl<-4>(p), m3);
    w[3] = _mm256_and_si256(shl<-6>(p), m3);
  }
}

inline __m256 ph(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256i u8x8(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }

struct SubScale {
  __m256 s[2], m[2];
};

// One tile block's scales for the 8 rows of half `half` (see the AVX-512 kernel for the formulas).
template <Geometry G>
struct BlockScales {
  const uint8_t* sc;
  int half;
  __m256 d, m;
  BlockScales(const uint8_t* p, int hf) : sc(p), half(hf) {
    d = ph(p + G.d_at + 16 * hf);
    if constexpr (G.m_at >= 0) m = ph(p + G.m_at + 16 * hf);
    if constexpr (G.scales == Scales::k_sc_mn || G.scales == Scales::k_scmn16)
      m = _mm256_sub_ps(_mm256_setzero_ps(), m);
  }
  // Q2_K: the scale bytes (sc | mn << 4) of sub-block s for these 8 rows as (lo, hi) 16-bit lane pairs.
  __m256i pair_bytes(int s) const {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + G.sc_at + 32 * s + 16 * half)));
  }
  SubScale sub(int s) const {
    SubScale r;
    const uint8_t* p = sc + 8 * half;
    if constexpr (G.scales == Scales::d) {
      r.s[0] = d;
    } else if constexpr (G.scales == Scales::d_m) {
      r.s[0] = d, r.m[0] = m;
    } else if constexpr (G.scales == Scales::k_sc_mn) {
      r.s[0] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(u8x8(p + G.sc_at + 16 * s)));
      r.m[0] = _mm256_mul_ps(m, _mm256_cvtepi32_ps(u8x8(p + G.mn_at + 16 * s)));
    } else {
      // 16-element halves: the 8 rows' (lo, hi) scale byte pairs, widened to 16-bit lane pairs.
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + G.sc_at + 32 * s + 16 * half));
      if constexpr (G.scales == Scales::k_sc16) {
        const __m256i pr = _mm256_cvtepi8_epi16(raw);
        r.s[0] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(pr, 16), 16)));
        r.s[1] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_srai_epi32(pr, 16)));
      } else {
        const __m256i pr = _mm256_cvtepu8_epi16(raw), lo4 = _mm256_set1_epi32(15);
        const __m256i b[2] = {_mm256_and_si256(pr, _mm256_set1_epi32(0xff)), _mm256_srli_epi32(pr, 16)};
        for (int h = 0; h < 2; ++h) {
          r.s[h] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(b[h], lo4)));
          r.m[h] = _mm256_mul_ps(m, _mm256_cvtepi32_ps(_mm256_srli_epi32(b[h], 4)));
        }
      }
    }
    return r;
  }
};

// Chain start (the codes' offset; Q8_0 needs none, see dot4) and fold, as in the AVX-512 kernel.
template <Geometry G>
inline __m256i chain_init(const QActs& a, const uint8_t* blk, int r, int h) {
  if constexpr (G.corr == 0 || G.bits == 8) {
    return _mm256_setzero_si256();
  } else if constexpr (G.sub16()) {
    return _mm256_set1_epi32(G.corr * a.s16(blk, r)[h]);
  } else {
    return h == 0 ? _mm256_set1_epi32(*a.off(blk, r)) : _mm256_setzero_si256();
  }
}

template <Geometry G>
inline __m256 fold(__m256 facc, __m256i isum, const SubScale& ss, const QActs& a, const uint8_t* blk, int r, int h) {
  const float da = *a.d(blk, r);
  facc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(ss.s[h], _mm256_set1_ps(da)), facc);
  if constexpr (G.scales == Scales::d_m || G.scales == Scales::k_sc_mn)
    facc = _mm256_fmadd_ps(ss.m[0], _mm256_set1_ps(*a.ds(blk, r)), facc);
  if constexpr (G.scales == Scales::k_scmn16)
    facc = _mm256_fmadd_ps(ss.m[h], _mm256_set1_ps(da * float(a.s16(blk, r)[h])), facc);
  return facc;
}

// acc[r] = row r0 + r's chain start + its int dot with half h (quads 4h..4h+3) of a sub-block's codes.
template <Geometry G, int MR, int h>
inline void half_dots(const uint8_t* q, const QActs& a, const uint8_t* blk, int r0, __m256i* acc) {
  __m256i w[4];
  unpack_half<G.bits, h>(q, w);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) acc[r] = chain_init<G>(a, blk, r0 + r, h);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
      acc[r] = _mm256_add_epi32(acc[r], dot4<G.bits>(w[i], a.q(blk, r0 + r) + 16 * h + 4 * i));
}

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
    const BlockScales<G> bs(tile + G.scale_offset(b), half);
    for (int s = 0; s < G.subs(); ++s) {
      const uint8_t* q = qb + s * G.sub_bytes();
      const uint8_t* blk = a.block(g, b * G.subs() + s);
      [[maybe_unused]] const SubScale ss = bs.sub(s);  // (unused by the pair path)
      if constexpr (!G.sub16()) {
        __m256i acc[MR];
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) acc[r] = chain_init<G>(a, blk, r0 + r, 0);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          __m256i w[4];
          if (h == 0) unpack_half<G.bits, 0>(q, w);
          else unpack_half<G.bits, 1>(q, w);
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i)
#pragma GCC unroll 16
            for (int r = 0; r < MR; ++r)
              acc[r] = _mm256_add_epi32(acc[r], dot4<G.bits>(w[i], a.q(blk, r0 + r) + 16 * h + 4 * i));
        }
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) facc[r] = fold<G>(facc[r], acc[r], ss, a, blk, r0 + r, 0);
      } else if constexpr (MR > 1 && G.scales == Scales::k_scmn16) {
        // Q2_K: a row's two half dots fit 16 bits, so they are paired in 16-bit lanes and scaled by one
        // vpmaddwd with the rows' (lo, hi) scale pairs, the mins by one more, then one float fold per
        // sub-block (as the AVX-512 kernel).
        __m256i lo[MR], hi[MR];
        half_dots<G, MR, 0>(q, a, blk, r0, lo);
        half_dots<G, MR, 1>(q, a, blk, r0, hi);
        const __m256i pr = bs.pair_bytes(s);
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
        half_dots<G, MR, 0>(q, a, blk, r0, acc);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) facc[r] = fold<G>(facc[r], acc[r], ss, a, blk, r0 + r, 0);
        half_dots<G, MR, 1>(q, a, blk, r0, acc);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) facc[r] = fold<G>(facc[r], acc[r], ss, a, blk, r0 + r, 1);
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

template <size_t... I>
std::array<GemmFn, packed::kNumFormats> all_gemms(std::index_sequence<I...>) {
  return {gemm<packed::kFormats[I].g>...};
}

}  // namespace

std::array<GemmFn, packed::kNumFormats> avx2_gemms() { return all_gemms(std::make_index_sequence<packed::kNumFormats>{}); }

}  // namespace tinfer

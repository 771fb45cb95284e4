// AVX-512 VNNI quantized GEMM on the 16-row tile layout (packed_layout.h): one vpdpbusd multiplies
// a 64-byte k-quad (16 weight rows x 4 k, u8) by 4 broadcast activation bytes (s8), giving 16 rows'
// int32 partial sums. MR activation rows share each weight load, so prefill reuses weights in registers.
// GCC 12's AVX-512 headers build "undefined" vectors that -W(maybe-)uninitialized flags falsely.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/kernel_table.h"
#include "kernels/packed_layout.h"

namespace tinfer {
namespace {

enum class Kind { q8_0, q4_0, q4_1 };

// Weights stream from DRAM in decode steps. With one or two activation rows per pass the interleaved
// layout (packed_layout.h) is one sequential stream that the hardware prefetchers follow at the full
// read bandwidth, and software prefetch only costs (TinyLlama decode step, Zen 4, fast memory mode:
// Q8_0 17.4-18.1 ms without vs 21.5-23.3 ms with a 2 KiB prefetch; Q4_0 slow mode 15.5 vs 19.8 ms).
// With 4+ rows (batched decode) a block takes ~8x longer to compute and the demand loads of the
// first group's pass stall on L1 misses: a 2 KiB prefetch into L1 (NTA: the slice is reread only
// from L1) takes a 16-row Q8_0 step from 74-80 to ~60 ms and an 8-row one from 52-55 to 33-36 ms.
// (With the previous layout, scales in a region ahead of the quants, 8 KiB into L2 suited both.)
template <int MR>
inline void prefetch_weights(const uint8_t* qb, int qbytes) {
  if constexpr (MR > 2) {
#pragma GCC unroll 8
    for (int c = 0; c < qbytes; c += 64) _mm_prefetch(reinterpret_cast<const char*>(qb + 2048 + c), _MM_HINT_NTA);
  }
}

inline __m512i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Rows r0..r0+MR of activation group g, for blocks [b0, b1) of one tile: acc[row][0..16) +=
// sum_b d_w * d_a * (int dot + off). acc holds MR rows of 16 floats and persists across block ranges.
template <Kind K, int MR>
inline void tile_rows(const uint8_t* tile, const QActs& a, int64_t g, int r0, int64_t b0, int64_t b1, float* acc_io,
                      bool prefetch) {
  constexpr DType type = K == Kind::q8_0 ? DType::Q8_0 : K == Kind::q4_0 ? DType::Q4_0 : DType::Q4_1;
  constexpr int qbytes = K == Kind::q8_0 ? 512 : 256;
  __m512 facc[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) facc[r] = _mm512_loadu_ps(acc_io + 16 * r);
  const __m512i lo4 = _mm512_set1_epi8(0x0f);
  for (int64_t b = b0; b < b1; ++b) {
    const uint8_t* qb = tile + packed::quant_offset(type, b);
    const auto* scales = reinterpret_cast<const uint16_t*>(tile + packed::scale_offset(type, b));
    if (prefetch) prefetch_weights<MR>(qb, qbytes);  // (past tile ends too: the next tile follows)
    const __m512 wd = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
    __m512i w[8];
    if constexpr (K == Kind::q8_0) {
#pragma GCC unroll 16
      for (int j = 0; j < 8; ++j) w[j] = _mm512_loadu_si512(qb + 64 * j);
    } else if constexpr (MR > 1) {  // (MR == 1 unpacks in its own loop below)
#pragma GCC unroll 16
      for (int c = 0; c < 4; ++c) {
        const __m512i v = _mm512_loadu_si512(qb + 64 * c);
        w[c] = _mm512_and_si512(v, lo4);
        w[c + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), lo4);
      }
    }
    // j outer, r inner: MR independent vpdpbusd chains in flight (latency ~5 cycles each).
    const uint8_t* blk = a.block(g, b);
    __m512i acc[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
      acc[r] = K != Kind::q4_1 ? _mm512_set1_epi32(*a.off(blk, r0 + r)) : _mm512_setzero_si512();
    if constexpr (MR == 1 && K != Kind::q8_0) {
      // Decode, 4-bit: multiply the high nibbles in place (v & 0xf0 = 16 * q, no shift per chunk); one
      // exact arithmetic shift of that chain's sum per block removes the 16.
      __m512i acc16 = _mm512_setzero_si512();
      const int8_t* q = a.q(blk, r0);
      const __m512i hi4 = _mm512_set1_epi8(char(0xf0));
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m512i v = _mm512_loadu_si512(qb + 64 * c);
        acc[0] = _mm512_dpbusd_epi32(acc[0], _mm512_and_si512(v, lo4), bcast4(q + 4 * c));
        acc16 = _mm512_dpbusd_epi32(acc16, _mm512_and_si512(v, hi4), bcast4(q + 16 + 4 * c));
      }
      acc[0] = _mm512_add_epi32(acc[0], _mm512_srai_epi32(acc16, 4));
    } else if constexpr (MR == 1) {  // one row: split its chain in two
      __m512i acc1 = _mm512_setzero_si512();
      const int8_t* q = a.q(blk, r0);
#pragma GCC unroll 16
      for (int j = 0; j < 8; j += 2) {
        acc[0] = _mm512_dpbusd_epi32(acc[0], w[j], bcast4(q + 4 * j));
        acc1 = _mm512_dpbusd_epi32(acc1, w[j + 1], bcast4(q + 4 * j + 4));
      }
      acc[0] = _mm512_add_epi32(acc[0], acc1);
    } else {
#pragma GCC unroll 16
      for (int j = 0; j < 8; ++j)
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r)
          acc[r] = _mm512_dpbusd_epi32(acc[r], w[j], bcast4(a.q(blk, r0 + r) + 4 * j));
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      facc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r]), _mm512_mul_ps(wd, _mm512_set1_ps(*a.d(blk, r0 + r))),
                                facc[r]);
      if constexpr (K == Kind::q4_1) {
        const __m512 wm =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 16)));
        facc[r] = _mm512_fmadd_ps(wm, _mm512_set1_ps(*a.ds(blk, r0 + r)), facc[r]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) _mm512_storeu_ps(acc_io + 16 * r, facc[r]);
}

// Rows 0..n of group g over blocks [b0, b1), in micro-kernels of 8/4/2/1 rows (only 4+ rows prefetch).
template <Kind K>
inline void group_rows(const uint8_t* tile, const QActs& a, int64_t g, int n, int64_t b0,
                       int64_t b1, float* acc, bool prefetch) {
  if (n == kActGroup) return tile_rows<K, 8>(tile, a, g, 0, b0, b1, acc, prefetch);
  int r0 = 0;
  if (n >= 4) tile_rows<K, 4>(tile, a, g, 0, b0, b1, acc, prefetch), r0 = 4;
  if (n - r0 >= 2) tile_rows<K, 2>(tile, a, g, r0, b0, b1, acc + 16 * r0, false), r0 += 2;
  if (n - r0 >= 1) tile_rows<K, 1>(tile, a, g, r0, b0, b1, acc + 16 * r0, false);
}

// Per tile, the blocks are walked in slices small enough to stay in L1 (kSliceBytes of quants), and
// every activation group runs over a slice before the next slice: the tile's weights then come from
// DRAM/L2 once however many groups there are, and the first group's pass prefetches the slices ahead,
// so a batched-decode step (m = 8..64, weights streamed from DRAM) overlaps the weight stream with
// compute instead of alternating between them (measured: m = 16 took memory time + compute time).
template <Kind K>
void gemm(const GemmArgs& ga, int64_t t0, int64_t t1, int64_t i0, int64_t i1) {
  constexpr int64_t kSliceBytes = 4096;
  constexpr int64_t slice = kSliceBytes / (K == Kind::q8_0 ? 512 : 256);
  const int64_t nb = ga.a.nb, rows = i1 - i0;
  alignas(64) float acc[kMaxGemmRows * 16];
  for (int64_t t = t0; t < t1; ++t) {
    const int valid = int(std::min<int64_t>(packed::kTileRows, ga.rows - t * packed::kTileRows));
    const __mmask16 mask = __mmask16((1u << valid) - 1);
    const uint8_t* tile = ga.w + t * ga.tile_bytes;
    std::memset(acc, 0, sizeof(float) * 16 * size_t(rows));
    for (int64_t b0 = 0; b0 < nb; b0 += slice) {
      const int64_t b1 = std::min(nb, b0 + slice);
      for (int64_t g = i0 / kActGroup; g * kActGroup < i1; ++g) {
        const int n = int(std::min<int64_t>(kActGroup, i1 - g * kActGroup));
        group_rows<K>(tile, ga.a, g, n, b0, b1, acc + 16 * (g * kActGroup - i0), g * kActGroup == i0);
      }
    }
    float* y = ga.y + t * packed::kTileRows;
    for (int64_t i = 0; i < rows; ++i) _mm512_mask_storeu_ps(y + (i0 + i) * ga.ldy, mask, _mm512_load_ps(acc + 16 * i));
  }
}

}  // namespace

GemmFn avx512_gemm_q8_0() { return gemm<Kind::q8_0>; }
GemmFn avx512_gemm_q4_0() { return gemm<Kind::q4_0>; }
GemmFn avx512_gemm_q4_1() { return gemm<Kind::q4_1>; }

}  // namespace tinfer

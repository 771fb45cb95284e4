// Portable and AVX2+FMA versions of dot_f64 and xtx_rows (functions compiled for the ISA by attribute,
// called only when the CPU has it).
#include "quantize/simd.h"

#include <immintrin.h>


#include "core/isa.h"

namespace tinfer::quantize_detail {

namespace {

bool use_avx2() {
  static const bool yes = active_isa() != Isa::generic;
  return yes;
}
bool use_avx512() {
  static const bool yes = active_isa() == Isa::avx512;
  return yes;
}

double dot_f64_generic(const double* a, const double* b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += a[k] * b[k];
    s1 += a[k + 1] * b[k + 1];
    s2 += a[k + 2] * b[k + 2];
    s3 += a[k + 3] * b[k + 3];
  }
  for (; k < n; ++k) s0 += a[k] * b[k];
  return (s0 + s1) + (s2 + s3);
}

float panel_at(const float* p, int64_t n, int64_t c, int64_t t) {
  const int64_t pw = panel_width();
  return p[(c / pw) * n * pw + t * pw + c % pw];
}

void xtx_rows_generic(const float* p, int64_t n, int64_t cols, int64_t i0, int64_t i1, double* out) {
  for (int64_t i = i0; i < i1; ++i)
    for (int64_t j = i; j < cols; ++j) {
      float s = 0;
      for (int64_t t = 0; t < n; ++t) s += panel_at(p, n, i, t) * panel_at(p, n, j, t);
      out[i * cols + j] += double(s);
    }
}

__attribute__((target("avx2,fma"))) double hsum(__m256d v) {
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

__attribute__((target("avx2,fma"))) double dot_f64_avx2(const double* a, const double* b, int64_t n) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    s0 = _mm256_fmadd_pd(_mm256_loadu_pd(a + k), _mm256_loadu_pd(b + k), s0);
    s1 = _mm256_fmadd_pd(_mm256_loadu_pd(a + k + 4), _mm256_loadu_pd(b + k + 4), s1);
  }
  double s = hsum(_mm256_add_pd(s0, s1));
  for (; k < n; ++k) s += a[k] * b[k];
  return s;
}

// Outer products, token by token, from the panels: a tile of 4 rows i x W panels (8 W columns j) is 4 W ymm
// accumulators (+ W loads of the token's j values + 1 broadcast of an i value; W = 3 fills the 16 registers),
// every stream sequential. Summed in float over the chunk, then added to double.
template <int W>
__attribute__((target("avx2,fma"))) void xtx_tile_avx2(const float* p, int64_t n, int64_t cols, int64_t i, int64_t i1,
                                                       int64_t j, double* out) {
  __m256 acc[4][W];
  for (auto& r : acc)
    for (auto& v : r) v = _mm256_setzero_ps();
  const float* pi = p + (i / 8) * n * 8 + i % 8;
  const float* pj = p + (j / 8) * n * 8;
  for (int64_t t = 0; t < n; ++t) {
    __m256 b[W];
    for (int w = 0; w < W; ++w) b[w] = _mm256_loadu_ps(pj + w * n * 8 + t * 8);
    for (int a = 0; a < 4; ++a) {
      const __m256 xi = _mm256_broadcast_ss(pi + t * 8 + a);
      for (int w = 0; w < W; ++w) acc[a][w] = _mm256_fmadd_ps(xi, b[w], acc[a][w]);
    }
  }
  alignas(32) float v[8 * W];
  for (int a = 0; a < 4 && i + a < i1; ++a) {
    for (int w = 0; w < W; ++w) _mm256_store_ps(v + 8 * w, acc[a][w]);
    double* o = out + (i + a) * cols;
    for (int64_t b = 0; b < 8 * W && j + b < cols; ++b)
      if (j + b >= i + a) o[j + b] += double(v[b]);
  }
}

// The AVX-512 version: panels of 16, tiles of 8 rows i x W panels (8 W + W + 1 <= 32 zmm registers).
template <int W>
__attribute__((target("avx512f"))) void xtx_tile_avx512(const float* p, int64_t n, int64_t cols, int64_t i,
                                                        int64_t i1, int64_t j, double* out) {
  __m512 acc[8][W];
  for (auto& r : acc)
    for (auto& v : r) v = _mm512_setzero_ps();
  const float* pi = p + (i / 16) * n * 16 + i % 16;
  const float* pj = p + (j / 16) * n * 16;
  for (int64_t t = 0; t < n; ++t) {
    __m512 b[W];
    for (int w = 0; w < W; ++w) b[w] = _mm512_loadu_ps(pj + w * n * 16 + t * 16);
    for (int a = 0; a < 8; ++a) {
      const __m512 xi = _mm512_set1_ps(pi[t * 16 + a]);
      for (int w = 0; w < W; ++w) acc[a][w] = _mm512_fmadd_ps(xi, b[w], acc[a][w]);
    }
  }
  alignas(64) float v[16 * W];
  for (int a = 0; a < 8 && i + a < i1; ++a) {
    for (int w = 0; w < W; ++w) _mm512_store_ps(v + 16 * w, acc[a][w]);
    double* o = out + (i + a) * cols;
    for (int64_t b = 0; b < 16 * W && j + b < cols; ++b)
      if (j + b >= i + a) o[j + b] += double(v[b]);
  }
}

// i0 is a multiple of 8.
__attribute__((target("avx512f"))) void xtx_rows_avx512(const float* p, int64_t n, int64_t cols, int64_t i0,
                                                        int64_t i1, double* out) {
  const int64_t padded = (cols + 15) / 16 * 16;
  for (int64_t i = i0; i < i1; i += 8) {
    int64_t j = i / 16 * 16;
    for (; j + 48 <= padded; j += 48) xtx_tile_avx512<3>(p, n, cols, i, i1, j, out);
    if (j + 32 <= padded) xtx_tile_avx512<2>(p, n, cols, i, i1, j, out), j += 32;
    if (j < padded) xtx_tile_avx512<1>(p, n, cols, i, i1, j, out);
  }
}

// i0 is a multiple of 4.
__attribute__((target("avx2,fma"))) void xtx_rows_avx2(const float* p, int64_t n, int64_t cols, int64_t i0,
                                                       int64_t i1, double* out) {
  const int64_t padded = (cols + 7) / 8 * 8;
  for (int64_t i = i0; i < i1; i += 4) {
    int64_t j = i / 8 * 8;  // from the panel holding the diagonal; entries below it are dropped
    for (; j + 24 <= padded; j += 24) xtx_tile_avx2<3>(p, n, cols, i, i1, j, out);
    if (j + 16 <= padded) xtx_tile_avx2<2>(p, n, cols, i, i1, j, out), j += 16;
    if (j < padded) xtx_tile_avx2<1>(p, n, cols, i, i1, j, out);
  }
}

}  // namespace

double dot_f64(const double* a, const double* b, int64_t n) {
  return use_avx2() ? dot_f64_avx2(a, b, n) : dot_f64_generic(a, b, n);
}

int panel_width() { return use_avx512() ? 16 : 8; }

void pack_panels(const float* x, int64_t n, int64_t cols, float* p) {
  const int64_t pw = panel_width(), panels = (cols + pw - 1) / pw;
  for (int64_t q = 0; q < panels; ++q)
    for (int64_t t = 0; t < n; ++t)
      for (int64_t k = 0; k < pw; ++k) {
        const int64_t c = q * pw + k;
        p[q * n * pw + t * pw + k] = c < cols ? x[t * cols + c] : 0.f;
      }
}

void xtx_rows(const float* p, int64_t n, int64_t cols, int64_t i0, int64_t i1, double* out) {
  if (use_avx512()) return xtx_rows_avx512(p, n, cols, i0, i1, out);
  if (use_avx2()) return xtx_rows_avx2(p, n, cols, i0, i1, out);
  xtx_rows_generic(p, n, cols, i0, i1, out);
}

}  // namespace tinfer::quantize_detail

// Cholesky (Crout order: each column's entries are independent dot products, split over the pool) and the
// upper factor of the inverse through the reversed matrix: with J the reversal, J H J = L L^T gives
// H^-1 = (J L^-1 J)^T (J L^-1 J), so U = J L^-1 J costs one factorisation and one triangular inverse.
#include "quantize/linalg.h"

#include <cmath>

#include "core/thread_pool.h"
#include "quantize/simd.h"

namespace tinfer::quantize_detail {

double dot(const double* a, const double* b, int64_t n) { return dot_f64(a, b, n); }

namespace {

// Work below this many multiply-adds stays on the calling thread.
constexpr int64_t kParallelWork = 1 << 16;

}  // namespace

bool cholesky_lower(std::vector<double>& a, int64_t n, ThreadPool* pool) {
  for (int64_t j = 0; j < n; ++j) {
    double* aj = &a[j * n];
    const double d = aj[j] - dot(aj, aj, j);
    if (!(d > 0) || !std::isfinite(d)) return false;
    const double ljj = std::sqrt(d);
    aj[j] = ljj;
    auto col = [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        double* ai = &a[i * n];
        ai[j] = (ai[j] - dot(ai, aj, j)) / ljj;
      }
    };
    const int64_t below = n - j - 1;
    if (pool && pool->size() > 1 && below * j >= kParallelWork)
      pool->parallel_for(below, 8, [&](int64_t b, int64_t e) { col(j + 1 + b, j + 1 + e); });
    else
      col(j + 1, n);
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) a[i * n + j] = 0;
  return true;
}

bool inverse_cholesky_upper(const std::vector<double>& h, int64_t n, std::vector<float>& u, ThreadPool* pool) {
  std::vector<double> l(size_t(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) l[i * n + j] = h[(n - 1 - i) * n + (n - 1 - j)];
  if (!cholesky_lower(l, n, pool)) return false;
  std::vector<double> lt(size_t(n * n));  // L^T: row j holds column j of L, contiguous
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) lt[j * n + i] = l[i * n + j];
  // X = L^-1 row by row (rows are independent): X[i][j] = -(sum_{k=j+1..i} X[i][k] L[k][j]) / L[j][j].
  std::vector<double> x(size_t(n * n), 0.0);
  auto row = [&](int64_t i) {
    double* xi = &x[i * n];
    xi[i] = 1.0 / lt[i * n + i];
    for (int64_t j = i - 1; j >= 0; --j) xi[j] = -dot(xi + j + 1, &lt[j * n + j + 1], i - j) / lt[j * n + j];
  };
  if (pool && pool->size() > 1 && n * n * n / 6 >= kParallelWork)
    pool->run([&](int t, int nt) {
      for (int64_t i = t; i < n; i += nt) row(i);  // interleaved: row i costs ~i^2/2
    });
  else
    for (int64_t i = 0; i < n; ++i) row(i);
  u.assign(size_t(n * n), 0.f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i; j < n; ++j) u[i * n + j] = float(x[(n - 1 - i) * n + (n - 1 - j)]);
  return true;
}

}  // namespace tinfer::quantize_detail

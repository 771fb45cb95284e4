// Internal: the dense linear algebra GPTQ needs (symmetric positive definite factorisations), in double,
// row-major, optionally split over a thread pool.
#pragma once
#include <cstdint>
#include <vector>

namespace tinfer {

class ThreadPool;

namespace quantize_detail {

double dot(const double* a, const double* b, int64_t n);

// In place: the lower Cholesky factor L (A = L L^T) of the symmetric matrix a (n x n; only its lower
// triangle is read). The upper triangle is zeroed. False if a is not (numerically) positive definite.
bool cholesky_lower(std::vector<double>& a, int64_t n, ThreadPool* pool);

// u (n x n, row-major, upper triangular): U^T U = H^-1, the factor GPTQ propagates errors with
// (U[i][i]^2 is the variance of column i given the columns after it). False if h is not positive definite.
bool inverse_cholesky_upper(const std::vector<double>& h, int64_t n, std::vector<float>& u, ThreadPool* pool);

}  // namespace quantize_detail
}  // namespace tinfer

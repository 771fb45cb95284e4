// Internal: the two hot loops of the quantize toolkit that the kernel table does not cover, with an
// AVX2+FMA (and for X^T X an AVX-512) version chosen at run time (TINFER_ISA=generic forces the portable one).
#pragma once
#include <cstdint>

namespace tinfer::quantize_detail {

// sum a[k] * b[k] in double.
double dot_f64(const double* a, const double* b, int64_t n);

// The column width pw of the panels xtx_rows reads (16 with AVX-512, else 8).
int panel_width();
// A chunk x [n][cols] as panels of pw columns, p[(c / pw) * n * pw + t * pw + c % pw], the last one
// zero-padded: p holds ceil(cols / pw) * pw * n floats.
void pack_panels(const float* x, int64_t n, int64_t cols, float* p);
// Rows [i0, i1) (i0 a multiple of 8) of the upper triangle of X^T X from the panels of a chunk: for
// i in [i0, i1), j in [i, cols): out[i * cols + j] += sum_t x[t][i] x[t][j] (summed in float over the chunk).
void xtx_rows(const float* p, int64_t n, int64_t cols, int64_t i0, int64_t i1, double* out);

}  // namespace tinfer::quantize_detail

// Plain scalar reference kernels: the oracles every optimised kernel is tested against.
// They read weights in their ORIGINAL GGUF row layout (never the packed tiles) and accumulate in double.
#pragma once
#include <cstdint>

#include "tinfer/act_quant.h"
#include "quant/dtype.h"

namespace tinfer::ref {

// y[i][r] = sum_c x[i][c] * W[r][c], W = type table to_float of the GGUF rows w ([rows][row_bytes]).
void matmul(DType type, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y);

// Activations quantized per 32-block as the fast path does: d = amax / 127, q = nearbyint(x / d), amax of
// the block (ActQuant::block32) or of the row (ActQuant::token); s16[2b], s16[2b+1] = the sums of q over
// each 16-element half of block b.
void quantize_act_row(const float* x, int64_t cols, ActQuant mode, int8_t* q, float* d, int16_t* s16);

// The int8 path's oracle: like matmul, but each activation block is replaced by d * q (its quantized
// value), so the only difference to the fast kernels is fp32 vs double rounding.
void matmul_qact(DType type, const void* w, int64_t rows, int64_t cols, const float* x, int64_t m, float* y,
                 ActQuant mode = ActQuant::block32);

void rmsnorm(const float* x, const float* w, float* out, int64_t n, float eps);
void silu_mul(float* gate, const float* up, int64_t n);
void gelu_mul(float* gate, const float* up, int64_t n);  // tanh GELU (GeGLU)
void add_inplace(float* y, const float* x, int64_t n);
void softmax_inplace(float* x, int64_t n);
float dot_f32(const float* a, const float* b, int64_t n);
void axpy(float a, const float* x, float* y, int64_t n);
void scale_inplace(float* x, float s, int64_t n);

}  // namespace tinfer::ref

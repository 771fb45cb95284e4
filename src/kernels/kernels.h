// Kernel API used by the model: packed weight matrices, matmul, and fused element-wise ops.
// Every function has a plain reference in kernels/ref/ and one implementation per ISA
// (kernels/cpu/{generic,avx2,avx512}/), chosen at run time (TINFER_ISA forces one).
#pragma once
#include <cstdint>

#include "tinfer/act_quant.h"
#include "core/buffer.h"
#include "core/isa.h"
#include "tinfer/op_profile.h"
#include "quant/dtype.h"

namespace tinfer {

class ThreadPool;
struct KernelTable;  // per-ISA function table, defined in kernels/kernel_table.h

// A weight matrix W of shape [rows][cols] (rows = output features, cols = input features, GGUF
// row-major: each row is `cols` elements stored in blocks of the type). Quantized types are
// re-laid out into tiles of 16 interleaved rows (same block values and scales, so the model stays
// in its stored format and size); the layout is ISA-independent, so any kernel table can consume it.
struct PackedMatrix {
  DType type = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  Buffer data;  // huge-page backed
};

// Packs a GGUF-layout matrix (src: rows * row_bytes(type, cols) bytes). Throws Error if unsupported.
PackedMatrix pack_matrix(DType type, const void* src, int64_t rows, int64_t cols);

// Reads row r of a packed matrix back as floats (cols values): used for embedding lookups and tests.
void unpack_row(const PackedMatrix& w, int64_t r, float* dst);

// y[i][r] = sum_c x[i][c] * W[r][c] for i < m. x: [m][cols] floats, y: [m][rows] floats.
// Quantized weights: activations are quantized to int8 (per 32-block, or per row with ActQuant::token)
// and multiplied with int8 dot products (VNNI on AVX-512); m > 1 runs a blocked GEMM, not a loop of
// matrix-vector products.
void matmul(const PackedMatrix& w, const float* x, int64_t m, float* y, ThreadPool& pool);
void matmul(const PackedMatrix& w, const float* x, int64_t m, float* y, ThreadPool& pool, const KernelTable& kt,
            OpProfile* prof = nullptr, Op role = Op::kMatmulQkv, ActQuant act = ActQuant::block32);
// Profiled: activation quantization is timed as Op::kActQuant, the GEMM itself as `role` (with the weight
// bytes it streamed and its multiply-adds).
void matmul(const PackedMatrix& w, const float* x, int64_t m, float* y, ThreadPool& pool, OpProfile* prof, Op role,
            ActQuant act = ActQuant::block32);

// The kernel table for an ISA, and for the active ISA (TINFER_ISA or the best available).
const KernelTable& kernel_table(Isa isa);
const KernelTable& active_kernels();

// Fused element-wise ops (active ISA).
void rmsnorm(const float* x, const float* w, float* out, int64_t n, float eps);  // out = x / rms(x) * w
void silu_mul(float* gate, const float* up, int64_t n);                          // gate = silu(gate) * up
void gelu_mul(float* gate, const float* up, int64_t n);                          // gate = gelu_tanh(gate) * up
void add_inplace(float* y, const float* x, int64_t n);                           // y += x
void softmax_inplace(float* x, int64_t n);
// Sampling weights over a vocabulary row: e[i] = exp((x[i] - best) * inv_t) (0 where x[i] is NaN or -inf;
// best >= every x[i] keeps them in [0, 1]), and sums[c] = the sum of e[i] over chunk c, the kExpChunk
// elements from kExpChunk * c (the last chunk partial): a draw finds its chunk, then its token, without a
// second pass over the row. e may be x.
constexpr int64_t kExpChunk = 64;
void exp_weights(const float* x, int64_t n, float best, float inv_t, float* e, float* sums);
// The first index of the largest value of x[0, n) (n >= 1), NaN never chosen; 0 when every value is NaN.
int64_t argmax(const float* x, int64_t n);
float dot_f32(const float* a, const float* b, int64_t n);
void axpy(float a, const float* x, float* y, int64_t n);  // y += a * x
void scale_inplace(float* x, float s, int64_t n);

}  // namespace tinfer

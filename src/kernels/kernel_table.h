// KernelTable: the per-ISA function table (one per cpu/<isa>/ directory), plus the argument structs
// its quantized GEMMs take. Every table consumes the same ISA-independent packed layout (packed_layout.h).
#pragma once
#include <cstdint>

#include "core/isa.h"

namespace tinfer {

// Activations quantized per 32-block: q = round(x / d), d = amax / 127, so q is in [-127, 127].
// All arrays are [m][...] with row strides given; sum = sum(q) of the block (for the weight offsets),
// ds = d * sum (for Q4_1's min term).
struct QActs {
  const int8_t* q = nullptr;   // [m][ldq]
  const float* d = nullptr;    // [m][nb]
  const int32_t* sum = nullptr;// [m][nb]
  const float* ds = nullptr;   // [m][nb]
  const int32_t* off = nullptr;// [m][nb] weight-offset term corr * sum (Q8_0: -128, Q4_0: -8, Q4_1: unused)
  int64_t ldq = 0;             // bytes per row of q (>= nb * 32)
  int64_t nb = 0;              // blocks per row
};

// One quantized GEMM call: y[i][r] += ... is NOT accumulated; y[i][r] is overwritten for
// i in [i0, i1), r in the rows of tiles [t0, t1) (the padded rows past `rows` are not stored).
struct GemmArgs {
  const uint8_t* w = nullptr;  // packed tiles (packed_layout.h)
  int64_t tile_bytes = 0;      // bytes per 16-row tile
  int64_t quant_offset = 0;    // offset of the quants inside a tile (after the scale region)
  int64_t rows = 0;
  QActs a;
  float* y = nullptr;
  int64_t ldy = 0;  // floats per row of y (= rows)
};

using GemmFn = void (*)(const GemmArgs& g, int64_t t0, int64_t t1, int64_t i0, int64_t i1);

struct KernelTable {
  Isa isa;
  // Quantizes one activation row (cols % 32 == 0) into q[cols], d/sum/ds[cols/32].
  void (*quantize_act_row)(const float* x, int64_t cols, int8_t* q, float* d, int32_t* sum, float* ds);
  GemmFn gemm_q8_0;
  GemmFn gemm_q4_0;
  GemmFn gemm_q4_1;
  // Element-wise ops (semantics in kernels.h).
  void (*rmsnorm)(const float* x, const float* w, float* out, int64_t n, float eps);
  void (*silu_mul)(float* gate, const float* up, int64_t n);
  void (*add_inplace)(float* y, const float* x, int64_t n);
  void (*softmax_inplace)(float* x, int64_t n);
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  void (*axpy)(float a, const float* x, float* y, int64_t n);
  void (*scale_inplace)(float* x, float s, int64_t n);
};

const KernelTable& kernel_table_generic();
const KernelTable& kernel_table_avx2();
const KernelTable& kernel_table_avx512();

}  // namespace tinfer

// KernelTable: the per-ISA function table (one per cpu/<isa>/ directory), plus the argument structs
// its quantized GEMMs take. Every table consumes the same ISA-independent packed layout (packed_layout.h).
#pragma once
#include <cstdint>

#include "core/isa.h"
#include "kernels/attention.h"
#include "quant/dtype.h"

namespace tinfer {

// Activations quantized per 32-block: q = round(x / d), d = amax / 127, so q is in [-127, 127].
// Stored as a panel that the GEMMs walk with one pointer: rows in groups of kActGroup (the last group
// zero-padded); per group and block, gr rows of q[32] int8, then d[gr] f32, off[gr] i32, ds[gr] f32
// (block_bytes(gr) = 44 * gr). gr = kActGroup, except a single row group (m < kActGroup) stores only
// its m rows: a decode step's activations then take 44 bytes per block instead of 352, and stay in
// L1 while the weights stream through it. off = corr * sum(q) removes the packed weights' offset
// (Q8_0 stores q + 128: corr -128; Q4_0 q + 8: corr -8); ds = d * sum(q) feeds Q4_1's min term.
constexpr int kActGroup = 8;
constexpr int64_t kMaxGemmRows = 64;  // activation rows per GEMM call (a multiple of kActGroup)
constexpr int64_t act_block_bytes(int gr) { return gr * 44; }
struct QActs {
  const uint8_t* panel = nullptr;
  int64_t nb = 0;  // blocks per row
  int gr = kActGroup;  // rows stored per group
  // The block b of group g, and its fields for row r of the group.
  const uint8_t* block(int64_t g, int64_t b) const { return panel + (g * nb + b) * act_block_bytes(gr); }
  const int8_t* q(const uint8_t* blk, int r) const { return reinterpret_cast<const int8_t*>(blk) + r * 32; }
  const float* d(const uint8_t* blk, int r) const { return reinterpret_cast<const float*>(blk + gr * 32) + r; }
  const int32_t* off(const uint8_t* blk, int r) const {
    return reinterpret_cast<const int32_t*>(blk + gr * 36) + r;
  }
  const float* ds(const uint8_t* blk, int r) const { return reinterpret_cast<const float*>(blk + gr * 40) + r; }
};

// One quantized GEMM call: y[i][r] += ... is NOT accumulated; y[i][r] is overwritten for
// i in [i0, i1), r in the rows of tiles [t0, t1) (the padded rows past `rows` are not stored).
// i0 is a multiple of kActGroup and i1 - i0 <= kMaxGemmRows.
struct GemmArgs {
  const uint8_t* w = nullptr;  // packed tiles (packed_layout.h)
  int64_t tile_bytes = 0;      // bytes per 16-row tile
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
  // Fast dequantization of one plain-layout row (F16, BF16, Q4_K, Q6_K); false = use the type table.
  bool (*dequant_row)(DType type, const void* src, float* dst, int64_t n);
  // Element-wise ops (semantics in kernels.h).
  void (*rmsnorm)(const float* x, const float* w, float* out, int64_t n, float eps);
  void (*silu_mul)(float* gate, const float* up, int64_t n);
  void (*add_inplace)(float* y, const float* x, int64_t n);
  void (*softmax_inplace)(float* x, int64_t n);
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  void (*axpy)(float a, const float* x, float* y, int64_t n);
  void (*scale_inplace)(float* x, float s, int64_t n);
  // Paged attention over work items (kernels/attention.h); falls back to generic_paged_attention for
  // the shapes this ISA's fast path does not take.
  AttentionFn paged_attention;
};

const KernelTable& kernel_table_generic();
const KernelTable& kernel_table_avx2();
const KernelTable& kernel_table_avx512();

}  // namespace tinfer

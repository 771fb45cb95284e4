// KernelTable: the per-ISA function table (one per cpu/<isa>/ directory), plus the argument structs
// its quantized GEMMs take. Every table consumes the same ISA-independent packed layout (packed_layout.h)
// and holds one GEMM per row of the packed-format table (packed_format.h), each ISA's kernel template
// instantiated from that row's Geometry.
#pragma once
#include <array>
#include <cstdint>
#include <utility>

#include "tinfer/act_quant.h"
#include "core/isa.h"
#include "kernels/attention.h"
#include "kernels/packed_format.h"
#include "quant/dtype.h"

namespace tinfer {

// Activations quantized per 32-block: q = round(x / d), d = amax / 127, so q is in [-127, 127] (amax of
// the block, or of the whole row with ActQuant::token: then every block of a row has the same d).
// Stored as a panel that the GEMMs walk with one pointer: rows in groups of kActGroup (the last group
// zero-padded); per group and block, gr rows of q[32] int8, then d[gr] f32, ds[gr] f32, off[gr] i32,
// s16[gr][2] i16 (block_bytes(gr) = 48 * gr). gr = kActGroup, except a single row group (m < kActGroup)
// stores only its m rows: a decode step's activations then take 48 bytes per block instead of 384, and
// stay in L1 while the weights stream through it. With S = sum(q): ds = d * S feeds the m / min terms
// (Q4_1, Q5_1, Q4_K, Q5_K); off = corr * S removes the packed codes' offset (code = value - corr: Q8_0
// stores q + 128, corr -128; Q4_0 q + 8, corr -8); s16 = the sums of q[0..16) and q[16..32), for the
// formats whose scales change every 16 elements (Q6_K, Q3_K: offset per half; Q2_K: min per half).
constexpr int kActGroup = 8;
constexpr int64_t kMaxGemmRows = 64;  // activation rows per GEMM call (a multiple of kActGroup)
constexpr int64_t act_block_bytes(int gr) { return gr * 48; }
struct QActs {
  const uint8_t* panel = nullptr;
  int64_t nb = 0;  // 32-blocks per row
  int gr = kActGroup;  // rows stored per group
  // The block b of group g, and its fields for row r of the group.
  const uint8_t* block(int64_t g, int64_t b) const { return panel + (g * nb + b) * act_block_bytes(gr); }
  const int8_t* q(const uint8_t* blk, int r) const { return reinterpret_cast<const int8_t*>(blk) + r * 32; }
  const float* d(const uint8_t* blk, int r) const { return reinterpret_cast<const float*>(blk + gr * 32) + r; }
  const float* ds(const uint8_t* blk, int r) const { return reinterpret_cast<const float*>(blk + gr * 36) + r; }
  const int32_t* off(const uint8_t* blk, int r) const {
    return reinterpret_cast<const int32_t*>(blk + gr * 40) + r;
  }
  const int16_t* s16(const uint8_t* blk, int r) const {
    return reinterpret_cast<const int16_t*>(blk + gr * 44) + 2 * r;
  }
};

// One quantized GEMM call: y[i][r] += ... is NOT accumulated; y[i][r] is overwritten for
// i in [i0, i1), r in the rows of tiles [t0, t1) (the padded rows past `rows` are not stored).
// i0 is a multiple of kActGroup and i1 - i0 <= kMaxGemmRows.
struct GemmArgs {
  const uint8_t* w = nullptr;  // packed tiles (packed_layout.h) of one format
  int64_t tile_bytes = 0;      // bytes per 16-row tile
  int64_t rows = 0;
  QActs a;
  float* y = nullptr;
  int64_t ldy = 0;  // floats per row of y (= rows)
};

using GemmFn = void (*)(const GemmArgs& g, int64_t t0, int64_t t1, int64_t i0, int64_t i1);
using GemmFns = std::array<GemmFn, packed::kNumFormats>;  // one per packed format, indexed by packed::Fmt

// An ISA's GemmFns from its kernel template: make.template operator()<G>() is its GEMM for Geometry G,
// instantiated once per packed-format row.
template <class Make>
GemmFns gemms_per_format(Make make) {
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return GemmFns{make.template operator()<packed::kFormats[I].g>()...};
  }(std::make_index_sequence<packed::kNumFormats>{});
}

// One float-weight GEMM call: W in its GGUF row layout (F32, F16 or BF16; rows row_bytes apart), fp32
// activations x [m][cols], fp32 accumulation: y[i * ldy + r] = W[r] . x[i] (overwritten) for r in
// [r0, r1), i in [i0, i1).
struct FloatGemmArgs {
  DType type = DType::F32;
  const uint8_t* w = nullptr;
  int64_t row_bytes = 0;
  int64_t cols = 0;
  const float* x = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
  // KernelTable::bf16_gemm only: the activations rounded to bf16, rows ldxb apart (ldxb a multiple of 32
  // >= cols, zero-padded); x is not read.
  const uint16_t* xb = nullptr;
  int64_t ldxb = 0;
};
using FloatGemmFn = void (*)(const FloatGemmArgs& g, int64_t r0, int64_t r1, int64_t i0, int64_t i1);

struct KernelTable {
  Isa isa;
  // Quantizes one activation row (cols % 32 == 0) into q[cols], d[cols/32] and the sums of each
  // 16-element half, s16[2 * (cols/32)]. ActQuant::token: d = amax(row) / 127 for every block.
  void (*quantize_act_row)(const float* x, int64_t cols, ActQuant mode, int8_t* q, float* d, int16_t* s16);
  // One GEMM per packed format (packed_format.h), indexed by packed::Fmt.
  std::array<GemmFn, packed::kNumFormats> gemm;
  // Float weights (F32, F16, BF16): register-tiled fp32 FMA GEMM/GEMV, conversions exact.
  FloatGemmFn float_gemm;
  // Fast dequantization of one plain-layout row (F16, BF16); false = use the type table.
  bool (*dequant_row)(DType type, const void* src, float* dst, int64_t n);
  // Element-wise ops (semantics in kernels.h).
  void (*rmsnorm)(const float* x, const float* w, float* out, int64_t n, float eps);
  void (*silu_mul)(float* gate, const float* up, int64_t n);
  void (*gelu_mul)(float* gate, const float* up, int64_t n);
  void (*add_inplace)(float* y, const float* x, int64_t n);
  void (*softmax_inplace)(float* x, int64_t n);
  void (*exp_weights)(const float* x, int64_t n, float best, float inv_t, float* e, float* sums);
  int64_t (*argmax)(const float* x, int64_t n);
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  void (*axpy)(float a, const float* x, float* y, int64_t n);
  void (*scale_inplace)(float* x, float s, int64_t n);
  // Paged attention over work items (kernels/attention.h); falls back to generic_paged_attention for
  // the shapes this ISA's fast path does not take.
  AttentionFn paged_attention;
  // Batched BF16-weight GEMMs (m > 1) on bf16 dot products (AVX512-BF16 vdpbf16ps, fp32 accumulation;
  // kernels/cpu/common/gemm_bf16.h): bf16_round_acts rounds activation rows [i0, i1) of x [.][cols] to
  // bf16 (nearest even) into xb (rows ldxb apart, zero-padded), once per matmul call; bf16_gemm is then
  // float_gemm's contract over FloatGemmArgs::xb. Both null where the CPU lacks AVX512-BF16 (then
  // float_gemm runs, exact). with_float_gemm_mode adjusts them (TINFER_FLOAT_GEMM); bf16_round_acts set
  // with bf16_gemm null means "bf16 activations through float_gemm" (the same numbers on any CPU).
  void (*bf16_round_acts)(const float* x, int64_t cols, int64_t i0, int64_t i1, uint16_t* xb, int64_t ldxb);
  FloatGemmFn bf16_gemm;
};

// The float-weight GEMM mode (TINFER_FLOAT_GEMM, read once for the active table): null, "" or "auto":
// the table as it is (bf16 dots for batched BF16 weights where the CPU has them, else exact fp32);
// "fp32": exact fp32 FMAs everywhere (the entries nulled); "bf16": bf16-rounded activations for batched
// BF16 weights everywhere: the native dots where present, else the activations rounded to bf16 and run
// through float_gemm (same numbers up to fp32 summation order: quality A/B on any CPU, at fp32 speed).
// Throws Error on another value.
KernelTable with_float_gemm_mode(KernelTable kt, const char* mode);

const KernelTable& kernel_table_generic();
const KernelTable& kernel_table_avx2();
const KernelTable& kernel_table_avx512();

}  // namespace tinfer

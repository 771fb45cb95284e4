// Q5_0 and Q5_1: blocks of 32 5-bit codes, the low 4 bits in qs (Q4_0's nibble order) and the fifth in
// qh (bit j = element j). Q5_0: x = d * (q - 16); Q5_1: x = d * q + m. Reference pair bit-exact with
// ggml's quantize_row_q5_{0,1}_ref / dequantize_row_q5_{0,1}; plus the code grid and weighted search.
// The bodies are shared with Q4_0/Q4_1 (q45_0_1_shared.h).
#include "quant/code_grid.h"
#include "quant/q45_0_1_shared.h"

namespace tinfer::quant_ref {

using Q5_0 = q45::Sym<5, BlockQ5_0>;
using Q5_1 = q45::Affine<5, BlockQ5_1>;

void q5_0_to_float(const void* src, float* dst, int64_t n) { Q5_0::to_float(src, dst, n); }
void q5_0_from_float(const float* src, void* dst, int64_t n) { Q5_0::from_float(src, dst, n); }
void q5_1_to_float(const void* src, float* dst, int64_t n) { Q5_1::to_float(src, dst, n); }
void q5_1_from_float(const float* src, void* dst, int64_t n) { Q5_1::from_float(src, dst, n); }

TINFER_DEFINE_CODE_GRID(q5_0, BlockQ5_0, kQK, q5_0_codes, Q5_0::codes, Q5_0::put_codes, Q5_0::grid_block, Q5_0::search)
TINFER_DEFINE_CODE_GRID(q5_1, BlockQ5_1, kQK, q5_1_codes, Q5_1::codes, Q5_1::put_codes, Q5_1::grid_block, Q5_1::search)

}  // namespace tinfer::quant_ref

// Q4_0 and Q4_1: blocks of 32 4-bit codes; byte j holds element j (low nibble) and element j+16 (high
// nibble). Q4_0: x = d * (q - 8); Q4_1: x = d * q + m. Reference pair bit-exact with ggml's
// quantize_row_q4_{0,1}_ref / dequantize_row_q4_{0,1}; plus the code grid and weighted search. The
// bodies are shared with Q5_0/Q5_1 (q45_0_1_shared.h).
#include "quant/code_grid.h"
#include "quant/q45_0_1_shared.h"

namespace tinfer::quant_ref {

using Q4_0 = q45::Sym<4, BlockQ4_0>;
using Q4_1 = q45::Affine<4, BlockQ4_1>;

void q4_0_to_float(const void* src, float* dst, int64_t n) { Q4_0::to_float(src, dst, n); }
void q4_0_from_float(const float* src, void* dst, int64_t n) { Q4_0::from_float(src, dst, n); }
void q4_1_to_float(const void* src, float* dst, int64_t n) { Q4_1::to_float(src, dst, n); }
void q4_1_from_float(const float* src, void* dst, int64_t n) { Q4_1::from_float(src, dst, n); }

TINFER_DEFINE_CODE_GRID(q4_0, BlockQ4_0, kQK, q4_0_codes, Q4_0::codes, Q4_0::put_codes, Q4_0::grid_block, Q4_0::search)
TINFER_DEFINE_CODE_GRID(q4_1, BlockQ4_1, kQK, q4_1_codes, Q4_1::codes, Q4_1::put_codes, Q4_1::grid_block, Q4_1::search)

}  // namespace tinfer::quant_ref

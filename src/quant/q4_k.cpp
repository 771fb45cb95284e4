// Q4_K: super-blocks of 256 = 8 sub-blocks of 32, x = d*sc*q - dmin*mn, 4-bit codes in nibble planes.
// Everything but the reference search parameters is shared with Q5_K (q45_k_shared.h). Reference pair
// bit-exact with ggml's quantize_row_q4_K_ref / dequantize_row_q4_K; plus the code grid and weighted search.
#include "quant/code_grid.h"
#include "quant/q45_k_shared.h"

namespace tinfer::quant_ref {

namespace {
using F = q45k::Format<4, BlockQ4_K>;
constexpr q45k::RefSearch kRefSearch{F::kNmax, -1.f, 0.1f, 20};
}  // namespace

void q4_k_to_float(const void* src, float* dst, int64_t n) { F::to_float(src, dst, n); }
void q4_k_from_float(const float* src, void* dst, int64_t n) { F::from_float(src, dst, n, kRefSearch); }

TINFER_DEFINE_CODE_GRID(q4_k, BlockQ4_K, kQK_K, q4_k_codes, F::codes, F::put_codes, F::grid_block, F::search)

}  // namespace tinfer::quant_ref

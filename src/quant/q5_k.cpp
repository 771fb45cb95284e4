// Q5_K: super-blocks of 256 = 8 sub-blocks of 32, x = d*sc*q - dmin*mn, 5-bit codes: the low 4 bits in
// nibble planes (qs, as Q4_K) and the fifth in one high-bit plane (qh). Everything but the reference
// search parameters is shared with Q4_K (q45_k_shared.h). Reference pair bit-exact with ggml's
// quantize_row_q5_K_ref / dequantize_row_q5_K; plus the code grid and weighted search.
#include "quant/code_grid.h"
#include "quant/q45_k_shared.h"

namespace tinfer::quant_ref {

namespace {
using F = q45k::Format<5, BlockQ5_K>;
constexpr q45k::RefSearch kRefSearch{F::kNmax, -0.5f, 0.1f, 15};
}  // namespace

void q5_k_to_float(const void* src, float* dst, int64_t n) { F::to_float(src, dst, n); }
void q5_k_from_float(const float* src, void* dst, int64_t n) { F::from_float(src, dst, n, kRefSearch); }

TINFER_DEFINE_CODE_GRID(q5_k, BlockQ5_K, kQK_K, q5_k_codes, F::codes, F::put_codes, F::grid_block, F::search)

}  // namespace tinfer::quant_ref

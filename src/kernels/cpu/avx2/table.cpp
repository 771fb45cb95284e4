// The AVX2 (+FMA, F16C) kernel table: maddubs GEMMs, paged attention + portable element-wise ops at 8 floats.
#define TINFER_VEC_FLOATS 8
#include "kernels/cpu/common/vec.h"
#include "kernels/cpu/common/dequant.h"
#include "kernels/kernel_table.h"

namespace tinfer {

GemmFn avx2_gemm_q8_0();
GemmFn avx2_gemm_q4_0();
GemmFn avx2_gemm_q4_1();
AttentionFn avx2_paged_attention();

const KernelTable& kernel_table_avx2() {
  static const KernelTable t{Isa::avx2, v_quantize_act_row, avx2_gemm_q8_0(), avx2_gemm_q4_0(),
                             avx2_gemm_q4_1(), v_dequant_row, v_rmsnorm, v_silu_mul, v_add_inplace, v_softmax_inplace,
                             v_dot_f32, v_axpy, v_scale_inplace, avx2_paged_attention()};
  return t;
}

}  // namespace tinfer

// The AVX2 (+FMA, F16C) kernel table: maddubs GEMMs, paged attention + portable element-wise ops at 8 floats.
#define TINFER_VEC_FLOATS 8
#include "kernels/cpu/common/vec.h"
#include "kernels/cpu/common/dequant.h"
#include "kernels/cpu/common/gemm_float.h"
#include "kernels/kernel_table.h"

namespace tinfer {

std::array<GemmFn, packed::kNumFormats> avx2_gemms();
AttentionFn avx2_paged_attention();

const KernelTable& kernel_table_avx2() {
  static const KernelTable t{Isa::avx2, v_quantize_act_row, avx2_gemms(), v_float_gemm, v_dequant_row, v_rmsnorm, v_silu_mul, v_gelu_mul, v_add_inplace, v_softmax_inplace, v_exp_weights, v_argmax,
                             v_dot_f32, v_axpy, v_scale_inplace, avx2_paged_attention(),
                             nullptr, nullptr};  // no bf16 dot products on this ISA: float_gemm
  return t;
}

}  // namespace tinfer

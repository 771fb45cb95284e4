// The generic (baseline x86-64) kernel table: portable element-wise ops + plain C++ GEMMs and attention.
#define TINFER_VEC_FLOATS 4
#include "kernels/cpu/common/vec.h"
#include "kernels/cpu/common/dequant.h"
#include "kernels/cpu/common/gemm_float.h"
#include "kernels/attention.h"
#include "kernels/kernel_table.h"

namespace tinfer {

std::array<GemmFn, packed::kNumFormats> generic_gemms();

const KernelTable& kernel_table_generic() {
  static const KernelTable t{Isa::generic, v_quantize_act_row, generic_gemms(), v_float_gemm, v_dequant_row, v_rmsnorm, v_silu_mul, v_gelu_mul, v_add_inplace, v_softmax_inplace, v_exp_weights, v_argmax,
                             v_dot_f32, v_axpy, v_scale_inplace, generic_paged_attention,
                             nullptr, nullptr};  // no bf16 dot products on this ISA: float_gemm
  return t;
}

}  // namespace tinfer

// Run-time dispatch: the kernel table per ISA, the active one (TINFER_ISA or the best), and the
// element-wise wrappers of kernels.h that call through it.
#include <cstdlib>
#include <string>

#include "tinfer/error.h"
#include "core/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"

namespace tinfer {

namespace {
// TINFER_FLOAT_GEMM=bf16 on a CPU without the dot products: the rounding alone (f32_to_bf16 is
// nearest-even like vcvtne2ps2bf16, which also flushes denormal inputs to zero: no effect on model
// activations).
void round_acts_bf16_portable(const float* x, int64_t cols, int64_t i0, int64_t i1, uint16_t* xb, int64_t ldxb) {
  for (int64_t i = i0; i < i1; ++i) {
    int64_t c = 0;
    for (; c < cols; ++c) xb[i * ldxb + c] = f32_to_bf16(x[i * cols + c]);
    for (; c < ldxb; ++c) xb[i * ldxb + c] = 0;
  }
}
}  // namespace

const KernelTable& kernel_table(Isa isa) {
  check(cpu_supports(isa), std::string("kernel table: this CPU cannot run ISA ") + isa_name(isa));
  switch (isa) {
    case Isa::avx512: return kernel_table_avx512();
    case Isa::avx2: return kernel_table_avx2();
    case Isa::generic: break;
  }
  return kernel_table_generic();
}

KernelTable with_float_gemm_mode(KernelTable kt, const char* mode) {
  const std::string m = mode ? mode : "";
  if (m.empty() || m == "auto") return kt;
  if (m == "fp32") {
    kt.bf16_round_acts = nullptr;
    kt.bf16_gemm = nullptr;
    return kt;
  }
  check(m == "bf16", "TINFER_FLOAT_GEMM=" + m + ": expected auto, fp32 or bf16");
  if (!kt.bf16_gemm) kt.bf16_round_acts = round_acts_bf16_portable;
  return kt;
}

const KernelTable& active_kernels() {
  static const KernelTable t = with_float_gemm_mode(kernel_table(active_isa()), std::getenv("TINFER_FLOAT_GEMM"));
  return t;
}

void rmsnorm(const float* x, const float* w, float* out, int64_t n, float eps) { active_kernels().rmsnorm(x, w, out, n, eps); }
void silu_mul(float* gate, const float* up, int64_t n) { active_kernels().silu_mul(gate, up, n); }
void gelu_mul(float* gate, const float* up, int64_t n) { active_kernels().gelu_mul(gate, up, n); }
void add_inplace(float* y, const float* x, int64_t n) { active_kernels().add_inplace(y, x, n); }
void softmax_inplace(float* x, int64_t n) { active_kernels().softmax_inplace(x, n); }
int64_t argmax(const float* x, int64_t n) { return active_kernels().argmax(x, n); }
void exp_weights(const float* x, int64_t n, float best, float inv_t, float* e, float* sums) {
  active_kernels().exp_weights(x, n, best, inv_t, e, sums);
}
float dot_f32(const float* a, const float* b, int64_t n) { return active_kernels().dot_f32(a, b, n); }
void axpy(float a, const float* x, float* y, int64_t n) { active_kernels().axpy(a, x, y, n); }
void scale_inplace(float* x, float s, int64_t n) { active_kernels().scale_inplace(x, s, n); }

}  // namespace tinfer

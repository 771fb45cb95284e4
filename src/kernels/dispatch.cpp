// Run-time dispatch: the kernel table per ISA, the active one (TINFER_ISA or the best), and the
// element-wise wrappers of kernels.h that call through it.
#include "tinfer/error.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"

namespace tinfer {

const KernelTable& kernel_table(Isa isa) {
  check(cpu_supports(isa), std::string("kernel table: this CPU cannot run ISA ") + isa_name(isa));
  switch (isa) {
    case Isa::avx512: return kernel_table_avx512();
    case Isa::avx2: return kernel_table_avx2();
    case Isa::generic: break;
  }
  return kernel_table_generic();
}

const KernelTable& active_kernels() {
  static const KernelTable& t = kernel_table(active_isa());
  return t;
}

void rmsnorm(const float* x, const float* w, float* out, int64_t n, float eps) { active_kernels().rmsnorm(x, w, out, n, eps); }
void silu_mul(float* gate, const float* up, int64_t n) { active_kernels().silu_mul(gate, up, n); }
void gelu_mul(float* gate, const float* up, int64_t n) { active_kernels().gelu_mul(gate, up, n); }
void add_inplace(float* y, const float* x, int64_t n) { active_kernels().add_inplace(y, x, n); }
void softmax_inplace(float* x, int64_t n) { active_kernels().softmax_inplace(x, n); }
float dot_f32(const float* a, const float* b, int64_t n) { return active_kernels().dot_f32(a, b, n); }
void axpy(float a, const float* x, float* y, int64_t n) { active_kernels().axpy(a, x, y, n); }
void scale_inplace(float* x, float s, int64_t n) { active_kernels().scale_inplace(x, s, n); }

}  // namespace tinfer

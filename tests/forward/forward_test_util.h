// Shared pieces of the forward tests: the normalised mean squared error of a logit row against the reference.
#pragma once
#include <algorithm>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/kernels.h"

namespace tinfer::forward_test {

inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return num / std::max(den, 1e-30);
}

// The NMSE allowed for a BF16-weight model against the reference. Exact (fp32 FMAs over the widened
// weights: 1e-9) unless the active table rounds batched activations to bf16 (AVX512-BF16 dot products,
// or TINFER_FLOAT_GEMM=bf16): then each GEMM adds ~2^-16/3 of relative noise (kBf16ActNmse in
// matmul_test.cpp), compounded over the layers: measured 1e-5..1.3e-4 on the 1..6-layer shapes here
// (Zen 5, vdpbf16ps), so 5e-4, still 4x under the int8 paths' 2e-3.
inline double bf16_weights_nmse() { return active_kernels().bf16_round_acts ? 5e-4 : 1e-9; }

}  // namespace tinfer::forward_test

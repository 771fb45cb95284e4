// The AVX-512 (F/BW/VL/DQ/VNNI) kernel table: VNNI GEMMs, paged attention + portable element-wise ops at 16 floats;
// where the CPU also has AVX512-BF16, batched BF16-weight GEMMs on vdpbf16ps (gemm_bf16.h).
// GCC 12's AVX-512 headers build "undefined" vectors that -W(maybe-)uninitialized flags falsely.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#define TINFER_VEC_FLOATS 16
#include "kernels/cpu/common/vec.h"
#include "kernels/cpu/common/dequant.h"
#include "kernels/cpu/common/gemm_float.h"
#include "kernels/cpu/common/gemm_bf16.h"
#include "kernels/kernel_table.h"

namespace tinfer {

std::array<GemmFn, packed::kNumFormats> avx512_gemms();
AttentionFn avx512_paged_attention();

namespace {

// Same contract and rounding as v_quantize_act_row (cvtps rounds to nearest even, like nearbyint).
void quantize_act_row(const float* x, int64_t cols, ActQuant mode, int8_t* q, float* d, int16_t* s16) {
  const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  float row_amax = 0;
  if (mode == ActQuant::token) {
    __m512 m = _mm512_setzero_ps();
    for (int64_t k = 0; k < cols; k += 16) m = _mm512_max_ps(m, _mm512_and_ps(_mm512_loadu_ps(x + k), sign));
    row_amax = _mm512_reduce_max_ps(m);
  }
  for (int64_t b = 0; b < cols / 32; ++b) {
    const __m512 x0 = _mm512_loadu_ps(x + b * 32), x1 = _mm512_loadu_ps(x + b * 32 + 16);
    const float amax = mode == ActQuant::token
                           ? row_amax
                           : _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(x0, sign), _mm512_and_ps(x1, sign)));
    const float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, _mm512_set1_ps(id)));
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, _mm512_set1_ps(id)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * 32), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * 32 + 16), _mm512_cvtsepi32_epi8(q1));
    d[b] = db;
    s16[2 * b] = int16_t(_mm512_reduce_add_epi32(q0));
    s16[2 * b + 1] = int16_t(_mm512_reduce_add_epi32(q1));
  }
}

}  // namespace

const KernelTable& kernel_table_avx512() {
  static const bool bf16 = cpu_supports_avx512_bf16();
  static const KernelTable t{Isa::avx512, quantize_act_row, avx512_gemms(), v_float_gemm, v_dequant_row, v_rmsnorm, v_silu_mul, v_gelu_mul, v_add_inplace, v_softmax_inplace, v_exp_weights, v_argmax,
                             v_dot_f32, v_axpy, v_scale_inplace, avx512_paged_attention(),
                             // AVX512-BF16 is optional on top of this table's ISA: decided at run time.
                             bf16 ? bf16k::round_acts : nullptr, bf16 ? bf16k::gemm : nullptr};
  return t;
}

}  // namespace tinfer

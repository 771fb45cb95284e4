// Internal: the importance-weighted scale searches behind TypeTraits::from_float_weighted. Unlike
// k_quant_search.h these are not ports: they minimise sum_i w_i (x_i - deq_i)^2 directly (the objective
// the type table states), in double, and need not reproduce anyone's rounding. The same ideas as ggml's
// imatrix-aware quantizers (scan candidate scales around the range-filling one, least-squares refit for
// each, keep the best, then alternate rounding and refitting); w_i are the caller's weights as given.
#pragma once
#include <cstdint>

namespace tinfer::quant_ref {

// Symmetric: x ≈ d * L with integer L in [qmin, qmax] (qmin < 0 < qmax, or qmin == 0 for non-negative
// x such as sub-block scales). Returns d (any sign; 0 when all |x| are negligible, L = 0 or qmin).
// L: n codes (the signed values, no zero-point offset).
float weighted_scale_fit(int n, int qmin, int qmax, const float* x, const float* w, int32_t* L);

// Affine: x ≈ d * L + offset with L in [0, nmax] and d >= 0; with `nonpositive_offset` the offset is
// kept <= 0 (the K-quants store -offset as an unsigned min). Returns d; writes the offset.
float weighted_affine_fit(int n, int nmax, const float* x, const float* w, int32_t* L, float* offset,
                          bool nonpositive_offset);

// The K-quants' (Q2_K, Q4_K, Q5_K) first step: for each of n_sub sub-blocks of `sub` <= 32 values of x, the affine
// fit with the min stored unsigned (scales[j] = d, mins[j] = -offset, codes into L[sub*j ..]), and the weights of
// the super-block fits of those scales and mins: rounding sub-block j's scale by e moves its values by e*L_i, its
// min by e everywhere, so the weighted error grows by e^2 * sum w L^2 (w_scale[j]) and e^2 * sum w (w_min[j]).
void weighted_sub_block_fits(int n_sub, int sub, int nmax, const float* x, const float* w, uint8_t* L, float* scales,
                             float* mins, float* w_scale, float* w_min);

// The symmetric K-quants' (Q3_K, Q6_K) first step: for each of n_sub sub-blocks of `sub` values of x, the
// symmetric fit on codes qmin..qmax (scales[j] = d, the signed codes into L[sub*j ..]), and the weight of the
// super-block fit of those scales: rounding scale j by e grows the weighted error by e^2 * sum w L^2 (w_scale[j]).
void weighted_sub_block_scale_fits(int n_sub, int sub, int qmin, int qmax, const float* x, const float* w, int32_t* L,
                                   float* scales, float* w_scale);

// Codes for fixed (stored) d and offset: L = clamp(round((x - offset) / d), qmin, qmax); d == 0 gives
// the code nearest 0. Round-to-nearest is exact per element once the scales are fixed.
void round_to_grid(int n, int qmin, int qmax, const float* x, float d, float offset, int32_t* L);

}  // namespace tinfer::quant_ref

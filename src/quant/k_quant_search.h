// Internal: the scale searches shared by the K-quant reference quantizers (ggml's nearest_int,
// make_qx_quants with rmse_type 1 and no importance weights, make_q3_quants with do_rmse,
// make_qkx2_quants). Float operation
// order follows ggml exactly: the quantizers are bit-exact only if every rounding step matches.
#pragma once
#include <cstdint>
#include <cstring>

namespace tinfer::quant_ref {

// Round to nearest, ties to even, for |v| <= 2^22: adding 1.5 * 2^23 puts the integer part in the
// low mantissa bits (the FPU does the rounding).
inline int nearest_int(float v) {
  const float shifted = v + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, 4);
  return (bits & 0x007fffff) - 0x00400000;
}

// Symmetric quants L[i] in [0, 2*nmax) (offset by nmax) for n values; returns the scale
// (x ≈ scale * (L - nmax)). Tries 19 candidate inverse scales around -nmax/max and keeps the one
// with the best x²-weighted least-squares fit. All-|x| < 1e-15 → L = 0, scale 0.
float make_qx_quants_rmse1(int n, int nmax, const float* x, int8_t* L);

// Symmetric quants L[i] in [0, 2*nmax) (offset by nmax) for n values (Q3_K's sub-block search); returns
// the scale. Starts from the range-filling scale -nmax/max, then up to 5 sweeps of coordinate descent:
// each element's code is moved to the one the least-squares scale of the others prefers, kept if the
// x²-weighted fit improves. All-|x| < 1e-15 → L = 0, scale 0.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L);

// Asymmetric quants L[i] in [0, nmax] with x ≈ scale * L - the_min (the_min >= 0); searches
// nstep+1 inverse scales (rmin + rdelta*is + nmax) / (max - min) with a weighted least-squares
// fit of scale and min each time, keeping the lowest weighted squared (or absolute) error.
// Laux is n bytes of scratch.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad);

}  // namespace tinfer::quant_ref

// Portable fast row dequantizers for the row-layout types (F16, BF16), compiled once per ISA (included
// after vec.h, internal linkage). Same values as the type table's reference to_float. (Every quantized
// type is packed into tiles and multiplied by the int8 GEMMs instead.)
#pragma once
#include <cstring>

#include "quant/dtype.h"

namespace tinfer {
namespace {

// IEEE half -> float for kW lanes: shift the exponent/mantissa into place and rescale by 2^112
// (exact for normals and subnormals); inf/nan keep an all-ones exponent.
inline void v_f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    typedef uint16_t vh __attribute__((vector_size(kW * 2)));
    vh hv;
    std::memcpy(&hv, src + i, sizeof hv);
    const vi h = __builtin_convertvector(hv, vi);
    vi o = (h & 0x7fff) << 13;
    vf f;
    std::memcpy(&f, &o, sizeof f);
    f *= 5.192296858534828e+33f;  // 2^112
    vi bits;
    std::memcpy(&bits, &f, sizeof bits);
    bits |= ((h & 0x7c00) == 0x7c00) & 0x7f800000;
    bits |= (h & 0x8000) << 16;
    std::memcpy(dst + i, &bits, sizeof bits);
  }
  for (; i < n; ++i) {
    const uint32_t h = src[i];
    uint32_t o = (h & 0x7fff) << 13;
    float f;
    std::memcpy(&f, &o, 4);
    f *= 5.192296858534828e+33f;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((h & 0x7c00) == 0x7c00) bits |= 0x7f800000;
    bits |= (h & 0x8000) << 16;
    std::memcpy(dst + i, &bits, 4);
  }
}

inline float f16_scalar(uint16_t h) {
  float f;
  v_f16_to_f32(&h, &f, 1);
  return f;
}

inline void v_bf16_to_f32(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = uint32_t(src[i]) << 16;
    std::memcpy(dst + i, &u, 4);
  }
}

// Dequantizes n elements of one row; false for types it does not cover (the caller falls back to
// the type table).
inline bool v_dequant_row(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::F16: v_f16_to_f32(static_cast<const uint16_t*>(src), dst, n); return true;
    case DType::BF16: v_bf16_to_f32(static_cast<const uint16_t*>(src), dst, n); return true;
    default: return false;
  }
}

}  // namespace
}  // namespace tinfer

// Portable fast row dequantizers for the row-layout types (F16, BF16, Q4_K, Q6_K), compiled once per
// ISA (included after vec.h, internal linkage). Same values as the type table's reference to_float;
// the block formats are the GGUF ones described in quant/blocks.h.
#pragma once
#include <cstring>

#include "quant/blocks.h"
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

// Q4_K: 8 sub-blocks of 32, x = d * sc * q - dmin * mn with 6-bit (sc, mn) packed in 12 bytes.
inline void v_q4_k_to_f32(const BlockQ4_K* blocks, float* dst, int64_t n) {
  for (int64_t bi = 0; bi < n / kQK_K; ++bi) {
    const BlockQ4_K& b = blocks[bi];
    const float d = f16_scalar(b.d), dmin = f16_scalar(b.dmin);
    float* y = dst + bi * kQK_K;
    for (int j = 0; j < 4; ++j) {  // 64 elements: low nibbles = sub-block 2j, high = 2j+1
      uint8_t sc[2], mn[2];
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * j + h;
        if (s < 4) {
          sc[h] = b.scales[s] & 63;
          mn[h] = b.scales[s + 4] & 63;
        } else {
          sc[h] = uint8_t((b.scales[s + 4] & 0xf) | ((b.scales[s - 4] >> 6) << 4));
          mn[h] = uint8_t((b.scales[s + 4] >> 4) | ((b.scales[s] >> 6) << 4));
        }
      }
      const float d1 = d * sc[0], m1 = dmin * mn[0], d2 = d * sc[1], m2 = dmin * mn[1];
      const uint8_t* q = b.qs + 32 * j;
      for (int l = 0; l < 32; ++l) y[64 * j + l] = d1 * float(q[l] & 0xf) - m1;
      for (int l = 0; l < 32; ++l) y[64 * j + 32 + l] = d2 * float(q[l] >> 4) - m2;
    }
  }
}

// Q6_K: 16 sub-blocks of 16, x = d * sc * (q - 32), q = 4 low bits (ql) | 2 high bits (qh) << 4.
inline void v_q6_k_to_f32(const BlockQ6_K* blocks, float* dst, int64_t n) {
  for (int64_t bi = 0; bi < n / kQK_K; ++bi) {
    const BlockQ6_K& b = blocks[bi];
    const float d = f16_scalar(b.d);
    for (int half = 0; half < 2; ++half) {  // 128 elements each
      const uint8_t* ql = b.ql + 64 * half;
      const uint8_t* qh = b.qh + 32 * half;
      const int8_t* sc = b.scales + 8 * half;
      float* y = dst + bi * kQK_K + 128 * half;
      for (int is = 0; is < 2; ++is) {  // 16-element sub-blocks: scales is, is+2, is+4, is+6
        const float s0 = d * sc[is], s1 = d * sc[is + 2], s2 = d * sc[is + 4], s3 = d * sc[is + 6];
        for (int l = 16 * is; l < 16 * is + 16; ++l) {
          y[l] = s0 * float(int((ql[l] & 0xf) | ((qh[l] & 3) << 4)) - 32);
          y[l + 32] = s1 * float(int((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32);
          y[l + 64] = s2 * float(int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
          y[l + 96] = s3 * float(int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
      }
    }
  }
}

// Dequantizes n elements of one row; false for types it does not cover (the caller falls back to
// the type table).
inline bool v_dequant_row(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::F16: v_f16_to_f32(static_cast<const uint16_t*>(src), dst, n); return true;
    case DType::BF16: v_bf16_to_f32(static_cast<const uint16_t*>(src), dst, n); return true;
    case DType::Q4_K: v_q4_k_to_f32(static_cast<const BlockQ4_K*>(src), dst, n); return true;
    case DType::Q6_K: v_q6_k_to_f32(static_cast<const BlockQ6_K*>(src), dst, n); return true;
    default: return false;
  }
}

}  // namespace
}  // namespace tinfer

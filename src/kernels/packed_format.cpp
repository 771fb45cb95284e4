// Per packed format: one GGUF block -> its codes and scale fields (decode), and those fields -> floats
// (dequant), with the same float arithmetic as the type table's reference to_float so that
// unpack_row(pack_matrix(w)) == to_float(w) bit for bit. Block layouts: quant/blocks.h.
#include "kernels/packed_format.h"

#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"

namespace tinfer::packed::detail {

namespace {

// GGUF 4-bit order of the 32-element types: byte k (< 16) holds element k (low) and k + 16 (high).
inline void nibbles32(const uint8_t* qs, uint8_t* code) {
  for (int k = 0; k < 16; ++k) {
    code[k] = qs[k] & 15;
    code[k + 16] = qs[k] >> 4;
  }
}

}  // namespace

void decode_q8_0(const void* p, BlockFields& f) {
  const auto& b = *static_cast<const BlockQ8_0*>(p);
  f.d = b.d;
  for (int k = 0; k < kQK; ++k) f.code[k] = uint8_t(b.qs[k]) ^ 0x80;  // q + 128
}
void dequant_q8_0(const BlockFields& f, float* y) {
  const float d = fp16_to_f32(f.d);
  for (int k = 0; k < kQK; ++k) y[k] = float(int(f.code[k]) - 128) * d;
}

void decode_q4_0(const void* p, BlockFields& f) {
  const auto& b = *static_cast<const BlockQ4_0*>(p);
  f.d = b.d;
  nibbles32(b.qs, f.code);
}
void dequant_q4_0(const BlockFields& f, float* y) {
  const float d = fp16_to_f32(f.d);
  for (int k = 0; k < kQK; ++k) y[k] = float(f.code[k] - 8) * d;
}

void decode_q4_1(const void* p, BlockFields& f) {
  const auto& b = *static_cast<const BlockQ4_1*>(p);
  f.d = b.d;
  f.m = b.m;
  nibbles32(b.qs, f.code);
}
void dequant_q4_1(const BlockFields& f, float* y) {
  const float d = fp16_to_f32(f.d), m = fp16_to_f32(f.m);
  for (int k = 0; k < kQK; ++k) y[k] = float(f.code[k]) * d + m;
}

// Q5_0 / Q5_1: Q4_0 / Q4_1 nibbles plus a fifth bit per element: bit k of the 32-bit qh.
namespace {
void q5_codes(const uint8_t* qh4, const uint8_t* qs, uint8_t* code) {
  uint32_t qh;
  std::memcpy(&qh, qh4, 4);
  nibbles32(qs, code);
  for (int k = 0; k < kQK; ++k) code[k] = uint8_t(code[k] | (((qh >> k) & 1) << 4));
}
}  // namespace
void decode_q5_0(const void* p, BlockFields& f) {
  const auto& b = *static_cast<const BlockQ5_0*>(p);
  f.d = b.d;
  q5_codes(b.qh, b.qs, f.code);
}
void dequant_q5_0(const BlockFields& f, float* y) {
  const float d = fp16_to_f32(f.d);
  for (int k = 0; k < kQK; ++k) y[k] = float(f.code[k] - 16) * d;
}
void decode_q5_1(const void* p, BlockFields& f) {
  const auto& b = *static_cast<const BlockQ5_1*>(p);
  f.d = b.d;
  f.m = b.m;
  q5_codes(b.qh, b.qs, f.code);
}
void dequant_q5_1(const BlockFields& f, float* y) {
  const float d = fp16_to_f32(f.d), m = fp16_to_f32(f.m);
  for (int k = 0; k < kQK; ++k) y[k] = float(f.code[k]) * d + m;
}

// Q2_K: 16 sub-blocks of 16, x = d * (b & 15) * q - dmin * (b >> 4) with b = scales[e / 16]; element
// e = 128n + 32j + l has q = (qs[32n + l] >> 2j) & 3.
void decode_q2_k(const void* p, BlockFields& f) {
  const auto& b = *static_cast<const BlockQ2_K*>(p);
  f.d = b.d;
  f.m = b.dmin;
  std::memcpy(f.sc, b.scales, 16);
  for (int e = 0; e < kQK_K; ++e) f.code[e] = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}
void dequant_q2_k(const BlockFields& f, float* y) {
  const float d = fp16_to_f32(f.d), dmin = fp16_to_f32(f.m);
  for (int i = 0; i < 16; ++i) {
    const float dl = d * (f.sc[i] & 0xF), ml = dmin * (f.sc[i] >> 4);
    for (int l = 0; l < 16; ++l) y[16 * i + l] = dl * f.code[16 * i + l] - ml;
  }
}

// Q3_K: 16 sub-blocks of 16, x = d * (sc - 32) * (q - 4) with 6-bit sc (12 bytes, unpacked as GGUF does)
// and q = the 2 low bits (qs, as Q2_K) | the hmask bit (4n + j for element 128n + 32j + l: hmask[l]) << 2.
// The tile stores sc - 32 as s8.
void decode_q3_k(const void* p, BlockFields& f) {
  const auto& b = *static_cast<const BlockQ3_K*>(p);
  f.d = b.d;
  uint32_t aux[4];
  std::memcpy(aux, b.scales, 12);
  const uint32_t m1 = 0x03030303, m2 = 0x0f0f0f0f, tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & m2) | (((tmp >> 4) & m1) << 4);
  aux[3] = ((aux[1] >> 4) & m2) | (((tmp >> 6) & m1) << 4);
  aux[0] = (aux[0] & m2) | (((tmp >> 0) & m1) << 4);
  aux[1] = (aux[1] & m2) | (((tmp >> 2) & m1) << 4);
  uint8_t sc[16];
  std::memcpy(sc, aux, 16);
  for (int i = 0; i < 16; ++i) f.sc[i] = uint8_t(int8_t(sc[i] - 32));
  for (int e = 0; e < kQK_K; ++e) {
    const int n = e / 128, j = (e % 128) / 32, l = e % 32;
    const int lo = (b.qs[32 * n + l] >> (2 * j)) & 3, hi = (b.hmask[l] >> (4 * n + j)) & 1;
    f.code[e] = uint8_t(lo | hi << 2);
  }
}
void dequant_q3_k(const BlockFields& f, float* y) {
  const float d = fp16_to_f32(f.d);
  for (int i = 0; i < 16; ++i) {
    const float dl = d * int8_t(f.sc[i]);
    for (int l = 0; l < 16; ++l) y[16 * i + l] = dl * (f.code[16 * i + l] - 4);
  }
}

// Q4_K / Q5_K scales: 8 (sc, mn) 6-bit pairs packed in 12 bytes.
namespace {
void k4_scales(const uint8_t* q, BlockFields& f) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      f.sc[j] = q[j] & 63;
      f.mn[j] = q[j + 4] & 63;
    } else {
      f.sc[j] = uint8_t((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
      f.mn[j] = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
  }
}
}  // namespace

// Q5_K: Q4_K plus a fifth bit: element 32s + l has it in bit s of qh[l].
void decode_q5_k(const void* p, BlockFields& f) {
  const auto& b = *static_cast<const BlockQ5_K*>(p);
  f.d = b.d;
  f.m = b.dmin;
  k4_scales(b.scales, f);
  for (int s = 0; s < 8; ++s)
    for (int l = 0; l < 32; ++l) {
      const uint8_t nib = s % 2 ? b.qs[32 * (s / 2) + l] >> 4 : b.qs[32 * (s / 2) + l] & 15;
      f.code[32 * s + l] = uint8_t(nib | (((b.qh[l] >> s) & 1) << 4));
    }
}
void dequant_q5_k(const BlockFields& f, float* y) {
  const float d = fp16_to_f32(f.d), dmin = fp16_to_f32(f.m);
  for (int s = 0; s < 8; ++s) {
    const float d1 = d * f.sc[s], m1 = dmin * f.mn[s];
    for (int l = 0; l < 32; ++l) y[32 * s + l] = d1 * f.code[32 * s + l] - m1;
  }
}

// Q4_K: 8 sub-blocks of 32, x = d * sc * q - dmin * mn, 6-bit (sc, mn) packed in 12 bytes; qs byte
// 32j + l holds element 64j + l (low nibble) and 64j + 32 + l (high).
void decode_q4_k(const void* p, BlockFields& f) {
  const auto& b = *static_cast<const BlockQ4_K*>(p);
  f.d = b.d;
  f.m = b.dmin;
  k4_scales(b.scales, f);
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      f.code[64 * j + l] = b.qs[32 * j + l] & 15;
      f.code[64 * j + 32 + l] = b.qs[32 * j + l] >> 4;
    }
}
void dequant_q4_k(const BlockFields& f, float* y) {
  const float d = fp16_to_f32(f.d), dmin = fp16_to_f32(f.m);
  for (int s = 0; s < 8; ++s) {
    const float d1 = d * f.sc[s], m1 = dmin * f.mn[s];
    for (int l = 0; l < 32; ++l) y[32 * s + l] = d1 * f.code[32 * s + l] - m1;
  }
}

// Q6_K: 16 sub-blocks of 16, x = d * sc * (q - 32), q = 4 low bits (ql) | 2 high bits (qh) << 4.
void decode_q6_k(const void* p, BlockFields& f) {
  const auto& b = *static_cast<const BlockQ6_K*>(p);
  f.d = b.d;
  for (int i = 0; i < 16; ++i) f.sc[i] = uint8_t(b.scales[i]);
  for (int h = 0; h < 2; ++h) {  // 128 elements each
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    uint8_t* c = f.code + 128 * h;
    for (int l = 0; l < 32; ++l) {
      c[l] = uint8_t((ql[l] & 15) | ((qh[l] & 3) << 4));
      c[l + 32] = uint8_t((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
      c[l + 64] = uint8_t((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      c[l + 96] = uint8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
}
void dequant_q6_k(const BlockFields& f, float* y) {
  const float d = fp16_to_f32(f.d);
  for (int e = 0; e < 256; ++e) y[e] = d * int8_t(f.sc[e / 16]) * (f.code[e] - 32);
}

}  // namespace tinfer::packed::detail

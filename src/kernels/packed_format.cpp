// Per packed format: one GGUF block -> its codes and scale fields (decode), and those fields -> floats
// (dequant), with the same float arithmetic as the type table's reference to_float so that
// unpack_row(pack_matrix(w)) == to_float(w) bit for bit. Block layouts: quant/blocks.h.
#include "kernels/packed_format.h"

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

// Q4_K: 8 sub-blocks of 32, x = d * sc * q - dmin * mn, 6-bit (sc, mn) packed in 12 bytes; qs byte
// 32j + l holds element 64j + l (low nibble) and 64j + 32 + l (high).
void decode_q4_k(const void* p, BlockFields& f) {
  const auto& b = *static_cast<const BlockQ4_K*>(p);
  f.d = b.d;
  f.m = b.dmin;
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      f.sc[j] = b.scales[j] & 63;
      f.mn[j] = b.scales[j + 4] & 63;
    } else {
      f.sc[j] = uint8_t((b.scales[j + 4] & 0xf) | ((b.scales[j - 4] >> 6) << 4));
      f.mn[j] = uint8_t((b.scales[j + 4] >> 4) | ((b.scales[j] >> 6) << 4));
    }
  }
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

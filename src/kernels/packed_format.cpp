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

}  // namespace tinfer::packed::detail

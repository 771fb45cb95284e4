// Internal: where the integer codes of each block format sit in its bytes. The quantizers write codes
// L[e] (one per element e of the block, the raw stored integer) through pack_*, the dequantizers and the
// code-grid functions read them back through unpack_*; one layout, one place. Every pack_* writes only
// the bits it owns of the code (unpacking gives back L masked to those bits).
#pragma once
#include <cstdint>
#include <cstring>

namespace tinfer::quant_ref {

// ---- 32-element blocks (Q4_0, Q4_1, Q5_0, Q5_1) ----
// qs[16]: byte j holds element j in the low nibble and element j+16 in the high nibble.
inline void pack_nibbles32(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = uint8_t((L[j] & 0x0F) | ((L[j + 16] & 0x0F) << 4));
}
inline void unpack_nibbles32(const uint8_t* qs, uint8_t* L) {
  for (int j = 0; j < 16; ++j) {
    L[j] = qs[j] & 0x0F;
    L[j + 16] = qs[j] >> 4;
  }
}
// qh[4] (Q5_0/Q5_1): bit j of the little-endian u32 is bit 4 of element j's code.
inline void pack_fifth_bits32(const uint8_t* L, uint8_t* qh) {
  uint32_t h = 0;
  for (int j = 0; j < 32; ++j) h |= uint32_t((L[j] >> 4) & 1) << j;
  std::memcpy(qh, &h, 4);
}
inline void add_fifth_bits32(const uint8_t* qh, uint8_t* L) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  for (int j = 0; j < 32; ++j) L[j] = uint8_t(L[j] | (((h >> j) & 1) << 4));
}

// ---- 256-element super-blocks (K-quants) ----
// Nibble planes (Q4_K, Q5_K qs[128]): per 64 elements 32 bytes, byte l = element l (low nibble) and
// element l+32 (high nibble).
inline void pack_nibbles_k(const uint8_t* L, uint8_t* qs) {
  for (int p = 0; p < 4; ++p)
    for (int l = 0; l < 32; ++l) qs[32 * p + l] = uint8_t((L[64 * p + l] & 0x0F) | ((L[64 * p + l + 32] & 0x0F) << 4));
}
inline void unpack_nibbles_k(const uint8_t* qs, uint8_t* L) {
  for (int p = 0; p < 4; ++p)
    for (int l = 0; l < 32; ++l) {
      L[64 * p + l] = qs[32 * p + l] & 0x0F;
      L[64 * p + l + 32] = qs[32 * p + l] >> 4;
    }
}
// 2-bit planes (Q2_K, Q3_K qs[64]): per 128 elements 32 bytes, byte l holds elements l, l+32, l+64,
// l+96 at bits 0, 2, 4, 6.
inline void pack_crumbs_k(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* e = L + 128 * h + l;
      qs[32 * h + l] = uint8_t((e[0] & 3) | ((e[32] & 3) << 2) | ((e[64] & 3) << 4) | ((e[96] & 3) << 6));
    }
}
inline void unpack_crumbs_k(const uint8_t* qs, uint8_t* L) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l)
      for (int j = 0; j < 4; ++j) L[128 * h + 32 * j + l] = (qs[32 * h + l] >> (2 * j)) & 3;
}
// One high-bit plane (Q3_K hmask, Q5_K qh: 32 bytes): bit e/32 of byte e%32 is bit `bit` of element e's code.
inline void pack_high_bits_k(const uint8_t* L, int bit, uint8_t* hm) {
  std::memset(hm, 0, 32);
  for (int e = 0; e < 256; ++e) hm[e % 32] = uint8_t(hm[e % 32] | (((L[e] >> bit) & 1) << (e / 32)));
}
inline void add_high_bits_k(const uint8_t* hm, int bit, uint8_t* L) {
  for (int e = 0; e < 256; ++e) L[e] = uint8_t(L[e] | (((hm[e % 32] >> (e / 32)) & 1) << bit));
}

}  // namespace tinfer::quant_ref

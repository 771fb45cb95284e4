// Internal: what Q4_K and Q5_K share. Both are super-blocks of 256 = 8 sub-blocks of 32 with
// x = d*sc*q - dmin*mn, 6-bit (sc, mn) per sub-block packed in 12 bytes; they differ only in the code
// width (4 or 5 bits: nmax 15 or 31) and where the codes sit (q4_k.cpp / q5_k.cpp). Functions here work
// on the scale fields (ScaleMin) and on the 256 codes L as plain bytes; the family files pack them.
#pragma once
#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/code_layout.h"

namespace tinfer::quant_ref::q45k {

constexpr int kSub = 32;  // elements per sub-block
constexpr int kNSub = 8;  // sub-blocks per super-block

// The leading fields of BlockQ4_K and BlockQ5_K (same offsets in both).
struct ScaleMin {
  uint16_t d;     // fp16 super-block scale of the sub-block scales
  uint16_t dmin;  // fp16 super-block scale of the sub-block mins
  uint8_t scales[12];
};
template <class B>  // BlockQ4_K or BlockQ5_K
ScaleMin scale_min_of(const B& b) {
  ScaleMin s{b.d, b.dmin, {}};
  std::memcpy(s.scales, b.scales, 12);
  return s;
}
template <class B>
void set_scale_min(B& b, const ScaleMin& s) {
  b.d = s.d;
  b.dmin = s.dmin;
  std::memcpy(b.scales, s.scales, 12);
}

// scales[12] packing of 8 (sc, mn) 6-bit pairs:
//   bytes 0-3:  sc[0..3] low 6 bits, top 2 bits = sc[4..7] >> 4
//   bytes 4-7:  mn[0..3] low 6 bits, top 2 bits = mn[4..7] >> 4
//   bytes 8-11: low nibble = sc[4..7] & 15, high nibble = mn[4..7] & 15
void get_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* mn);
void set_scales_mins(const uint8_t* ls, const uint8_t* lm, uint8_t* q);  // 8 values each, <= 63

// ggml's make_qkx2_quants parameters of each format's reference sub-block search.
struct RefSearch {
  int nmax;
  float rmin, rdelta;
  int nstep;
};
// The reference quantizer (ggml's quantize_row_q{4,5}_K_ref) up to code packing: fills s and L.
void quantize_ref(const float* x, const RefSearch& p, ScaleMin& s, uint8_t* L);
// The weighted search (from_float_weighted): weighted affine fit per sub-block, then the 6-bit levels of
// the scales and mins fitted with the error each level's rounding causes (see q45_k_shared.cpp).
void quantize_weighted(const float* x, const float* w, int nmax, ScaleMin& s, uint8_t* L);
// y[256] = d*sc*L - dmin*mn (ggml's float order: (d*sc)*q - dmin*mn).
void dequantize(const ScaleMin& s, const uint8_t* L, float* y);
// Per element scale d*sc and offset -dmin*mn.
void grid(const ScaleMin& s, float* scale, float* offset);

// The per-block primitives and the reference pair of Q4_K (kBits 4, BlockQ4_K) and Q5_K (kBits 5,
// BlockQ5_K): the low 4 bits of each code in nibble planes (qs), for 5 bits the fifth in one high-bit
// plane (qh). The family files instantiate it.
template <int kBits, class B>
struct Format {
  static_assert(kBits == 4 || kBits == 5);
  static constexpr int kNmax = (1 << kBits) - 1;  // 15 or 31

  static void pack(const uint8_t* L, B& b) {
    pack_nibbles_k(L, b.qs);
    if constexpr (kBits == 5) pack_high_bits_k(L, 4, b.qh);
  }
  static void unpack(const B& b, uint8_t* L) {
    unpack_nibbles_k(b.qs, L);
    if constexpr (kBits == 5) add_high_bits_k(b.qh, 4, L);
  }
  static void store(const ScaleMin& s, const uint8_t* L, B& b) {
    set_scale_min(b, s);
    pack(L, b);
  }

  static void codes(const B& b, int32_t* q) {
    uint8_t L[kQK_K];
    unpack(b, L);
    for (int e = 0; e < kQK_K; ++e) q[e] = L[e];
  }
  static void put_codes(B& b, const int32_t* q) {
    uint8_t L[kQK_K];
    for (int e = 0; e < kQK_K; ++e) L[e] = uint8_t(q[e]);
    pack(L, b);
  }
  static void grid_block(const B& b, float* scale, float* offset) { grid(scale_min_of(b), scale, offset); }

  static void search(const float* x, const float* w, B& b) {
    ScaleMin s;
    uint8_t L[kQK_K];
    quantize_weighted(x, w, kNmax, s, L);
    store(s, L, b);
  }

  static void to_float(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const B*>(src);
    uint8_t L[kQK_K];
    for (int64_t i = 0; i < n / kQK_K; ++i) {
      unpack(b[i], L);
      dequantize(scale_min_of(b[i]), L, dst + i * kQK_K);
    }
  }
  // p: the format's reference search parameters (p.nmax == kNmax).
  static void from_float(const float* src, void* dst, int64_t n, const RefSearch& p) {
    auto* b = static_cast<B*>(dst);
    for (int64_t i = 0; i < n / kQK_K; ++i) {
      ScaleMin s;
      uint8_t L[kQK_K];
      quantize_ref(src + i * kQK_K, p, s, L);
      store(s, L, b[i]);
    }
  }
};

}  // namespace tinfer::quant_ref::q45k

// Internal: what Q4_K and Q5_K share. Both are super-blocks of 256 = 8 sub-blocks of 32 with
// x = d*sc*q - dmin*mn, 6-bit (sc, mn) per sub-block packed in 12 bytes; they differ only in the code
// width (4 or 5 bits: nmax 15 or 31) and where the codes sit (q4_k.cpp / q5_k.cpp). Functions here work
// on the scale fields (ScaleMin) and on the 256 codes L as plain bytes; the family files pack them.
#pragma once
#include <cstdint>
#include <cstring>

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

}  // namespace tinfer::quant_ref::q45k

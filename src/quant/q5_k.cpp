// Q5_K: super-blocks of 256 = 8 sub-blocks of 32, x = d*sc*q - dmin*mn, 5-bit codes: the low 4 bits in
// nibble planes (qs, as Q4_K) and the fifth in one high-bit plane (qh). The scale/min half is shared
// with Q4_K (q45_k_shared.h). Reference pair bit-exact with ggml's quantize_row_q5_K_ref /
// dequantize_row_q5_K; plus the code grid and weighted search.
#include "quant/blocks.h"
#include "quant/code_grid.h"
#include "quant/code_layout.h"
#include "quant/q45_k_shared.h"

namespace tinfer::quant_ref {

namespace {

constexpr q45k::RefSearch kRefSearch{31, -0.5f, 0.1f, 15};

void pack(const uint8_t* L, BlockQ5_K& b) {
  pack_nibbles_k(L, b.qs);
  pack_high_bits_k(L, 4, b.qh);
}
void unpack(const BlockQ5_K& b, uint8_t* L) {
  unpack_nibbles_k(b.qs, L);
  add_high_bits_k(b.qh, 4, L);
}
void store(const q45k::ScaleMin& s, const uint8_t* L, BlockQ5_K& b) {
  q45k::set_scale_min(b, s);
  pack(L, b);
}

void codes(const BlockQ5_K& b, int32_t* q) {
  uint8_t L[kQK_K];
  unpack(b, L);
  for (int e = 0; e < kQK_K; ++e) q[e] = L[e];
}
void put_codes(BlockQ5_K& b, const int32_t* q) {
  uint8_t L[kQK_K];
  for (int e = 0; e < kQK_K; ++e) L[e] = uint8_t(q[e]);
  pack(L, b);
}
void grid_block(const BlockQ5_K& b, float* scale, float* offset) { q45k::grid(q45k::scale_min_of(b), scale, offset); }

void search(const float* x, const float* w, BlockQ5_K& b) {
  q45k::ScaleMin s;
  uint8_t L[kQK_K];
  q45k::quantize_weighted(x, w, 31, s, L);
  store(s, L, b);
}

}  // namespace

void q5_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
  uint8_t L[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    unpack(b[i], L);
    q45k::dequantize(q45k::scale_min_of(b[i]), L, dst + i * kQK_K);
  }
}

void q5_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    q45k::ScaleMin s;
    uint8_t L[kQK_K];
    q45k::quantize_ref(src + i * kQK_K, kRefSearch, s, L);
    store(s, L, b[i]);
  }
}

TINFER_DEFINE_CODE_GRID(q5_k, BlockQ5_K, kQK_K, q5_k_codes, codes, put_codes, grid_block, search)

}  // namespace tinfer::quant_ref

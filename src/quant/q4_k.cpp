// Q4_K: super-blocks of 256 = 8 sub-blocks of 32, x = d*sc*q - dmin*mn, 4-bit codes in nibble planes.
// The scale/min half is shared with Q5_K (q45_k_shared.h). Reference pair bit-exact with ggml's
// quantize_row_q4_K_ref / dequantize_row_q4_K; plus the code grid and weighted search.
#include "quant/blocks.h"
#include "quant/code_grid.h"
#include "quant/code_layout.h"
#include "quant/q45_k_shared.h"

namespace tinfer::quant_ref {

namespace {

constexpr q45k::RefSearch kRefSearch{15, -1.f, 0.1f, 20};

void store(const q45k::ScaleMin& s, const uint8_t* L, BlockQ4_K& b) {
  q45k::set_scale_min(b, s);
  pack_nibbles_k(L, b.qs);
}

void codes(const BlockQ4_K& b, int32_t* q) {
  uint8_t L[kQK_K];
  unpack_nibbles_k(b.qs, L);
  for (int e = 0; e < kQK_K; ++e) q[e] = L[e];
}
void put_codes(BlockQ4_K& b, const int32_t* q) {
  uint8_t L[kQK_K];
  for (int e = 0; e < kQK_K; ++e) L[e] = uint8_t(q[e]);
  pack_nibbles_k(L, b.qs);
}
void grid_block(const BlockQ4_K& b, float* scale, float* offset) { q45k::grid(q45k::scale_min_of(b), scale, offset); }

void search(const float* x, const float* w, BlockQ4_K& b) {
  q45k::ScaleMin s;
  uint8_t L[kQK_K];
  q45k::quantize_weighted(x, w, 15, s, L);
  store(s, L, b);
}

}  // namespace

void q4_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  uint8_t L[kQK_K];
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    unpack_nibbles_k(b[i].qs, L);
    q45k::dequantize(q45k::scale_min_of(b[i]), L, dst + i * kQK_K);
  }
}

void q4_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    q45k::ScaleMin s;
    uint8_t L[kQK_K];
    q45k::quantize_ref(src + i * kQK_K, kRefSearch, s, L);
    store(s, L, b[i]);
  }
}

TINFER_DEFINE_CODE_GRID(q4_k, BlockQ4_K, kQK_K, q4_k_codes, codes, put_codes, grid_block, search)

}  // namespace tinfer::quant_ref

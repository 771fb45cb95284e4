// P·V of the AVX2 and AVX-512 paged attention kernels (block size 16), written once over a traits type V
// and included by each ISA's attention.cpp (compiled with its flags, cmake/isa.cmake; internal linkage).
// The kernels differ here only by vector width; the head and chunk counts stay template arguments, so the
// accumulators live in registers.
//
// V: x86_ops.h's Simd.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/common/attention_item.h"

namespace tinfer {
namespace {

// kL V values from byte p on, widened from the cache's codes on load (never a separate pass): f16 through
// vcvtph2ps, int8 sign-extended, int4 zero-extended (of the nibble `shift` selects, 0 low, 4 high).
template <class V, KvDtype D>
inline typename V::F v_chunk(const uint8_t* p, __m128i shift) {
  if constexpr (D == KvDtype::f32) return V::loadu(reinterpret_cast<const float*>(p));
  if constexpr (D == KvDtype::f16) return V::ph(p);
  if constexpr (D == KvDtype::int8) return V::cvt(V::s8x(p));
  return V::cvt(V::and_(V::srl32_by(V::u8x(p), shift), V::set1_32(15)));
}

// Where V dimension c0 (a multiple of kL) of a head's vector lives: byte offset (int4: nibble in v_shift).
template <KvDtype D>
inline int64_t v_offset(int64_t c0, int64_t hd) {
  if constexpr (D == KvDtype::int4) return c0 < hd / 2 ? c0 : c0 - hd / 2;
  return c0 * kv_dtype_info(D).value_bits / 8;
}

// O[h0+g][c0..c0+kL*CW) = r[g] * O + pm[g] + P[g] · V over one block's len slots: each V row chunk is
// loaded once for all GN heads (GN*CW accumulators + CW V vectors stay in registers). For int8/int4 V, P
// already carries the slots' scales and the chunks are the raw codes; pm[g] is int4's Σ_j p_j min_j (a
// constant over dimensions), 0 otherwise.
template <class V, KvDtype VD, int GN, int CW>
inline void block_pv(const AttnItem& it, const KvBlock16& blk, int64_t h0, int64_t c0, const float (*p)[16],
                     const float* r, const float* pm, bool prefetch) {
  typename V::F acc[GN][CW];
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g)
#pragma GCC unroll 4
    for (int c = 0; c < CW; ++c)
      acc[g][c] = V::fmadd(V::loadu(it.o + (h0 + g) * it.hd + c0 + V::kL * c), V::set1_f(r[g]), V::set1_f(pm[g]));
  int64_t off[CW];
  __m128i shift[CW];
#pragma GCC unroll 4
  for (int c = 0; c < CW; ++c) {
    off[c] = v_offset<VD>(c0 + V::kL * c, it.hd);
    shift[c] = _mm_cvtsi32_si128(VD == KvDtype::int4 && c0 + V::kL * c >= it.hd / 2 ? 4 : 0);
  }
  const int64_t vhb = it.kv->v_head_bytes, vss = blk.v_stride / it.kv->v_head_bytes * it.kv->v_scale_bytes;
  for (int64_t j = blk.begin; j < blk.len; ++j) {
    const uint8_t* vj = blk.v + j * blk.v_stride;
    if (prefetch) {  // the next block's V row j of this kv head (and its scale data), spread over this loop
      for (int64_t c = 0; c < vhb; c += 64) _mm_prefetch(reinterpret_cast<const char*>(blk.next_v + j * blk.v_stride) + c, _MM_HINT_T0);
      if (blk.next_vs) _mm_prefetch(reinterpret_cast<const char*>(blk.next_vs + j * vss), _MM_HINT_T0);
    }
    typename V::F vv[CW];
#pragma GCC unroll 4
    for (int c = 0; c < CW; ++c) vv[c] = v_chunk<V, VD>(vj + off[c], shift[c]);
#pragma GCC unroll 4
    for (int g = 0; g < GN; ++g) {
      const typename V::F w = V::bcast(&p[g][j]);
#pragma GCC unroll 4
      for (int c = 0; c < CW; ++c) acc[g][c] = V::fmadd(w, vv[c], acc[g][c]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < GN; ++g)
#pragma GCC unroll 4
    for (int c = 0; c < CW; ++c) V::storeu(it.o + (h0 + g) * it.hd + c0 + V::kL * c, acc[g][c]);
}

}  // namespace
}  // namespace tinfer

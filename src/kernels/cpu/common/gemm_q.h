// The pieces of the quantized GEMM (16-row tile layout, packed_layout.h) that the AVX2 and AVX-512 kernels
// share and that differ only by vector width: the code unpack of a sub-block's quads, a sub-block's per-row
// scales, the chains' start and the fold of an int dot into the float sums. Written once over a traits type
// V that each ISA's gemm_q.cpp defines and includes this with (compiled with its flags, cmake/isa.cmake;
// internal linkage, so the copies never collide). One vector holds V::kL rows (one 4-byte
// k-quad of each); AVX-512 covers a tile's 16 rows at once, AVX2 one 8-row half (bytes 32h..32h+31 of each
// 64-byte plane) per pass. Everything is inline and resolved at compile time: the same instructions as when
// each ISA spelled it out.
//
// V: x86_ops.h's Simd (I, F, kL and the operations) plus what the two ISAs do differently: kQ8Signed (dot
// multiplies Q8_0's codes as signed q, so they need no offset correction) and dot<bits>(acc, w, x) (acc +
// each row's dot of its u8 codes w with the 4 activation bytes at x).
#pragma once
#include <cstdint>

#include "kernels/kernel_table.h"
#include "kernels/packed_format.h"

namespace tinfer {
namespace {

// Quads 4h..4h+3 of a sub-block's codes (q: its first byte, + 32 * half on AVX2) as u8 planes.
template <class V, int bits, int h>
inline void unpack_half(const uint8_t* q, typename V::I w[4]) {
  using I = typename V::I;
  if constexpr (bits == 8) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) w[i] = V::load(q + 64 * (4 * h + i));
  } else if constexpr (bits == 6) {
    const I m63 = V::set1_8(63);
    if constexpr (h == 0) {
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) w[i] = V::and_(V::load(q + 64 * i), m63);
    } else {  // quads 6, 7: the top 2 bits of planes 0-2 and 3-5
      w[0] = V::and_(V::load(q + 256), m63);
      w[1] = V::and_(V::load(q + 320), m63);
      const I m3 = V::set1_8(3), b23 = V::set1_8(0x0c), b45 = V::set1_8(0x30);
#pragma GCC unroll 2
      for (int i = 0; i < 2; ++i) {
        const uint8_t* p = q + 192 * i;
        w[2 + i] = V::or_and(V::or_and(V::and_(V::template shl<-6>(V::load(p)), m3),
                                       V::template shl<-4>(V::load(p + 64)), b23),
                             V::template shl<-2>(V::load(p + 128)), b45);
      }
    }
  } else if constexpr (bits == 5) {
    const I m31 = V::set1_8(31);
    if constexpr (h == 0) {
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) w[i] = V::and_(V::load(q + 64 * i), m31);
    } else {  // quads 5-7: bits 0-2 atop planes 0-2, bits 3-4 atop planes 3-4
      const I p3 = V::load(q + 192), p4 = V::load(q + 256), m7 = V::set1_8(7);
      w[0] = V::and_(p4, m31);
      w[1] = V::or_and(V::and_(V::template shl<-5>(V::load(q)), m7), V::template shl<-2>(p3), V::set1_8(0x18));
      w[2] = V::or_and(V::and_(V::template shl<-5>(V::load(q + 64)), m7), V::template shl<-2>(p4), V::set1_8(0x18));
      w[3] = V::or_and(V::or_and(V::and_(V::template shl<-5>(V::load(q + 128)), m7), V::template shl<-4>(p3),
                                 V::set1_8(0x08)),
                       V::template shl<-3>(p4), V::set1_8(0x10));
    }
  } else if constexpr (bits == 4) {
    const I lo4 = V::set1_8(0x0f);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) w[i] = V::and_(V::template shl<-4 * h>(V::load(q + 64 * i)), lo4);
  } else if constexpr (bits == 3) {
    const I m7 = V::set1_8(7);
    const I p = V::load(q + 64 * (2 * h)), p1 = V::load(q + 64 * (2 * h + 1));
    w[0] = V::and_(p, m7);
    w[1] = V::and_(V::template shl<-3>(p), m7);
    if constexpr (h == 0) {
      w[2] = V::and_(p1, m7);
      w[3] = V::and_(V::template shl<-3>(p1), m7);
    } else {  // quads 6, 7: bits 0-1 atop planes 0, 1; bit 2 atop plane 2 (p)
      const I m3 = V::set1_8(3), b2 = V::set1_8(4);
      w[2] = V::or_and(V::and_(V::template shl<-6>(V::load(q)), m3), V::template shl<-4>(p), b2);
      w[3] = V::or_and(V::and_(V::template shl<-6>(V::load(q + 64)), m3), V::template shl<-5>(p), b2);
    }
  } else {
    const I p = V::load(q + 64 * h), m3 = V::set1_8(3);
    w[0] = V::and_(p, m3);
    w[1] = V::and_(V::template shl<-2>(p), m3);
    w[2] = V::and_(V::template shl<-4>(p), m3);
    w[3] = V::and_(V::template shl<-6>(p), m3);
  }
}

// Per-row multipliers of one sub-block: value = s * (int dot) + m * (activation sum terms); for 16-element
// sub-blocks, [0]/[1] are the two halves (quads 0-3, 4-7).
template <class V>
struct SubScale {
  typename V::F s[2], m[2];
};

// Which kL rows of a tile a pass covers: half 0 or 1 on AVX2; the whole tile on AVX-512, where `half` is a
// constant 0 and takes no storage (a stored 0 changed the AVX-512 kernels' register allocation).
template <bool whole>
struct RowPass {
  int half;
  explicit RowPass(int h) : half(h) {}
};
template <>
struct RowPass<true> {
  static constexpr int half = 0;
  explicit RowPass(int) {}
};

// The scales of one tile block for the rows of one pass, turned into SubScales per sub-block.
template <class V, packed::Geometry G>
struct BlockScales {
  using I = typename V::I;
  using F = typename V::F;
  using Scales = packed::Scales;
  const uint8_t* sc;
  [[no_unique_address]] RowPass<V::kL == packed::kTileRows> pass;
  F d, m;
  BlockScales(const uint8_t* p, int hf) : sc(p), pass(hf) {
    d = V::ph(p + G.d_at + 2 * V::kL * pass.half);
    if constexpr (G.m_at >= 0) m = V::ph(p + G.m_at + 2 * V::kL * pass.half);
    if constexpr (G.scales == Scales::k_sc_mn || G.scales == Scales::k_scmn16) m = V::neg(m);  // -dmin
  }
  // 16-element scales of sub-block s: the rows' (lo, hi) byte pairs as 16-bit lane pairs (sign-extended for
  // k_sc16, zero-extended for k_scmn16).
  I pairs(int s) const {
    const uint8_t* p = sc + G.sc_at + 32 * s + 2 * V::kL * pass.half;
    if constexpr (G.scales == Scales::k_sc16) return V::pairs_s8(p);
    else return V::pairs_u8(p);
  }
  SubScale<V> sub(int s) const {
    SubScale<V> r;
    if constexpr (G.scales == Scales::d) {
      r.s[0] = d;
    } else if constexpr (G.scales == Scales::d_m) {
      r.s[0] = d, r.m[0] = m;
    } else if constexpr (G.scales == Scales::k_sc_mn) {
      const uint8_t* p = sc + V::kL * pass.half;
      r.s[0] = V::mul(d, V::cvt(V::u8x(p + G.sc_at + 16 * s)));
      r.m[0] = V::mul(m, V::cvt(V::u8x(p + G.mn_at + 16 * s)));
    } else if constexpr (G.scales == Scales::k_sc16) {
      const I pr = pairs(s);
      r.s[0] = V::mul(d, V::cvt(V::template sra32<16>(V::template sll32<16>(pr))));
      r.s[1] = V::mul(d, V::cvt(V::template sra32<16>(pr)));
    } else {
      const I pr = pairs(s), lo4 = V::set1_32(15);
      const I b[2] = {V::and_(pr, V::set1_32(0xff)), V::template srl32<16>(pr)};
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        r.s[h] = V::mul(d, V::cvt(V::and_(b[h], lo4)));
        r.m[h] = V::mul(m, V::cvt(V::template srl32<4>(b[h])));
      }
    }
    return r;
  }
};

// The int32 chain start of a row for half h of a sub-block: the codes' offset corr * sum(q) over the
// elements the chain covers (one chain over both halves for 32-element scales: h = 0 takes all of it).
template <class V, packed::Geometry G>
inline typename V::I chain_init(const QActs& a, const uint8_t* blk, int r, int h) {
  if constexpr (G.corr == 0 || (V::kQ8Signed && G.bits == 8)) {
    return V::zero_i();
  } else if constexpr (G.sub16()) {
    return V::set1_32(G.corr * a.s16(blk, r)[h]);
  } else {
    return h == 0 ? V::set1_32(*a.off(blk, r)) : V::zero_i();
  }
}

// facc += the row's contribution from int dot(s) of a sub-block (32-element scales: `isum` over all 32;
// 16-element scales: called once per half h with that half's sum).
template <class V, packed::Geometry G>
inline typename V::F fold(typename V::F facc, typename V::I isum, const SubScale<V>& ss, const QActs& a,
                          const uint8_t* blk, int r, int h) {
  using Scales = packed::Scales;
  const float da = *a.d(blk, r);
  facc = V::fmadd(V::cvt(isum), V::mul(ss.s[h], V::set1_f(da)), facc);
  if constexpr (G.scales == Scales::d_m || G.scales == Scales::k_sc_mn)
    facc = V::fmadd(ss.m[0], V::set1_f(*a.ds(blk, r)), facc);
  if constexpr (G.scales == Scales::k_scmn16)
    facc = V::fmadd(ss.m[h], V::set1_f(da * float(a.s16(blk, r)[h])), facc);
  return facc;
}

// acc[r] = row r0 + r's chain start + its int dot with half h (quads 4h..4h+3) of a sub-block's codes.
template <class V, packed::Geometry G, int MR, int h>
inline void half_dots(const uint8_t* q, const QActs& a, const uint8_t* blk, int r0, typename V::I* acc) {
  typename V::I w[4];
  unpack_half<V, G.bits, h>(q, w);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) acc[r] = chain_init<V, G>(a, blk, r0 + r, h);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) acc[r] = V::template dot<G.bits>(acc[r], w[i], a.q(blk, r0 + r) + 16 * h + 4 * i);
}

}  // namespace
}  // namespace tinfer

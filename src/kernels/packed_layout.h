// The ISA-independent packed layout of the quantized weight types: one Geometry value describes a
// format completely (the rows of the table are in packed_format.h), and every kernel, pack and unpack
// computes its offsets from it.
//
// Rows are grouped in tiles of 16 (the last tile zero-padded). A tile is cut into "tile blocks": 16 rows x
// one GGUF block (32 elements for Q8_0/Q4_0/Q4_1/Q5_0/Q5_1, a 256-element super-block for the K-quants).
// `group` tile blocks form a group: one scale region (their scales, padded to whole 64-byte lines) followed
// by their quants; a tile is its groups one after the other (a partial last group holds only its blocks'
// quants). So a tile is one sequential stream, scales just ahead of the quants they scale.
//
// Quants ("codes": the stored unsigned integer of each weight, code + corr = its signed value) come in
// sub-blocks of 32 elements x 16 rows, 64 * bits bytes each, made of 64-byte planes whose byte 4r+u holds
// row r's element u of a "k-quad" (4 consecutive elements: quad j = elements 4j..4j+3):
//   bits 8: 8 planes, plane j = quad j's codes (one AVX-512 vpdpbusd: 16 rows x 4 k).
//   bits 4: 4 nibble planes, plane c = quad c in the low nibbles and quad c+4 in the high nibbles.
//   bits 5: 5 planes of 5-bit fields: plane k bits 0-4 = quad k (k < 5); quad 5 = plane 0 bits 5-7 |
//           plane 3 bits 5-6 << 3; quad 6 = plane 1 bits 5-7 | plane 4 bits 5-6 << 3; quad 7 = plane 2
//           bits 5-7 | plane 3 bit 7 << 3 | plane 4 bit 7 << 4.
//   bits 6: 6 planes of 6-bit fields: plane k bits 0-5 = quad k (k < 6); quad 6 = the top 2 bits of
//           planes 0, 1, 2 (code bits 0-1, 2-3, 4-5), quad 7 = those of planes 3, 4, 5.
//   bits 2: 2 planes: plane h, bits 2i..2i+1 = quad 4h+i's code.
//   bits 3: 3 planes of 3-bit fields: plane 0 = quad 0 (bits 0-2), quad 1 (3-5), bits 0-1 of quad 6 (6-7);
//           plane 1 = quads 2, 3 and bits 0-1 of quad 7; plane 2 = quads 4, 5, bit 2 of quads 6 (bit 6), 7 (7)
// (The 3/5/6-bit layouts make most quads one mask, or one shift and one mask: a fifth-bit plane cost a
// shift and a merge per quad, ~28% of a Q5 GEMV.)
// Quads 0-3 are elements 0-15 of the sub-block and quads 4-7 elements 16-31, so an int8 dot over quads
// 0-3 and one over quads 4-7 are the two 16-element halves the 16-element sub-block scales need.
// Scales: fp16 d (and m / dmin) as 16 halves per field; sub-block scales as bytes, [sub-block][16 rows] for
// 32-element sub-blocks and [32-element sub-block][16 rows][2 halves] for 16-element ones (a row's two
// scales of one activation block side by side: one 16-bit lane pair, for vpmaddwd).
//
// Why scales sit between the quants: a decode step streams each tile once, and one sequential stream
// is what the hardware prefetchers follow best. With all of a tile's scales in a region ahead of its
// quants (the previous layout) the Q4_0/Q8_0 GEMV reached 0.86-0.92 of a plain read loop on Zen 4;
// interleaved, 1.00-1.04 in both of the host's memory modes (scratch micro-benchmark, 1 GiB, 2 threads).
#pragma once
#include <cstdint>
#include <type_traits>

namespace tinfer::packed {

constexpr int kTileRows = 16;
constexpr int64_t kLine = 64;
constexpr int kSub = 32;  // elements per code sub-block (= per activation block)

// How a tile block's scales turn into per-row multipliers (the arithmetic family of a format).
enum class Scales : uint8_t {
  d,         // x = d * (code + corr)                                  (Q8_0, Q4_0, Q5_0)
  d_m,       // x = d * code + m                                       (Q4_1, Q5_1)
  k_sc_mn,   // per 32: x = d * sc * code - dmin * mn, sc/mn u8         (Q4_K, Q5_K)
  k_sc16,    // per 16: x = d * sc * (code + corr), sc s8               (Q6_K; Q3_K stores sc - 32)
  k_scmn16,  // per 16: x = d * (b & 15) * code - dmin * (b >> 4), b u8 (Q2_K)
};

struct Geometry {
  int block = 32;      // elements per tile block
  int bits = 8;        // bits per code: 8, 6, 5, 4, 3 or 2
  int corr = 0;        // a code's signed value is code + corr (Q8_0 -128, Q4_0 -8, Q6_K -32, ...)
  Scales scales = Scales::d;
  int group = 1;       // tile blocks per scale region
  int scale_bytes = 0; // scale bytes of one tile block
  // Byte offsets of the scale fields inside one tile block's scales (-1: absent):
  int d_at = -1;   // 16 fp16 d (the super-block d for K-quants)
  int m_at = -1;   // 16 fp16 m (Q4_1, Q5_1) or dmin (K-quants)
  int sc_at = -1;  // sub-block scales (bytes, at sc_at + sc_index(i, r))
  int mn_at = -1;  // sub-block mins, bytes [sub-block][16 rows] (Q4_K, Q5_K)

  constexpr bool sub16() const { return scales == Scales::k_sc16 || scales == Scales::k_scmn16; }
  // Offset (from sc_at) of row r's scale of sub-block i (16 or 32 elements).
  constexpr int sc_index(int i, int r) const { return sub16() ? 32 * (i / 2) + 2 * r + i % 2 : 16 * i + r; }
  constexpr int subs() const { return block / kSub; }
  constexpr int64_t sub_bytes() const { return 64 * bits; }
  constexpr int64_t quant_bytes() const { return subs() * sub_bytes(); }
  constexpr int64_t scale_region() const { return (group * scale_bytes + kLine - 1) / kLine * kLine; }
  constexpr int64_t group_bytes() const { return scale_region() + group * quant_bytes(); }
  constexpr int64_t tile_bytes(int64_t nb) const {
    const int64_t rem = nb % group;
    return nb / group * group_bytes() + (rem ? scale_region() + rem * quant_bytes() : 0);
  }
  // Offsets inside a tile of block b's scales and quants.
  constexpr int64_t scale_offset(int64_t b) const { return b / group * group_bytes() + b % group * scale_bytes; }
  constexpr int64_t quant_offset(int64_t b) const {
    return b / group * group_bytes() + scale_region() + b % group * quant_bytes();
  }
};

constexpr int64_t n_tiles(int64_t rows) { return (rows + kTileRows - 1) / kTileRows; }

// The code of row r, element k (< 32) of a sub-block (sub: its first byte), and the write of it.
// These state the plane layout above once; the SIMD kernels decode whole planes the same way.
template <int bits>
inline int get_code(const uint8_t* sub, int r, int k) {
  const int j = k / 4, pos = r * 4 + k % 4;
  if constexpr (bits == 8) {
    return sub[j * 64 + pos];
  } else if constexpr (bits == 6) {
    if (j < 6) return sub[j * 64 + pos] & 63;
    const int p = (j - 6) * 3;
    return (sub[p * 64 + pos] >> 6) | (sub[(p + 1) * 64 + pos] >> 6) << 2 | (sub[(p + 2) * 64 + pos] >> 6) << 4;
  } else if constexpr (bits == 5) {
    if (j < 5) return sub[j * 64 + pos] & 31;
    if (j == 5) return (sub[pos] >> 5) | ((sub[192 + pos] >> 5) & 3) << 3;
    if (j == 6) return (sub[64 + pos] >> 5) | ((sub[256 + pos] >> 5) & 3) << 3;
    return (sub[128 + pos] >> 5) | (sub[192 + pos] >> 7) << 3 | (sub[256 + pos] >> 7) << 4;
  } else if constexpr (bits == 4) {
    const uint8_t nib = sub[(j % 4) * 64 + pos];
    return j < 4 ? (nib & 15) : (nib >> 4);
  } else if constexpr (bits == 3) {
    if (j < 6) return (sub[(j / 2) * 64 + pos] >> (3 * (j % 2))) & 7;
    return (sub[(j - 6) * 64 + pos] >> 6) | (((sub[128 + pos] >> j) & 1) << 2);
  } else {
    return (sub[(j / 4) * 64 + pos] >> (2 * (j % 4))) & 3;
  }
}

// Writes row r's 32 codes of a sub-block: each plane byte 4r+u gathers the codes of row r, element u of
// every quad, so it is computed whole and stored once.
template <int bits>
inline void put_codes(uint8_t* sub, int r, const uint8_t* code) {
  for (int u = 0; u < 4; ++u) {
    const int pos = r * 4 + u;
    auto c = [&](int j) { return unsigned(code[4 * j + u]); };
    if constexpr (bits == 8) {
      for (int j = 0; j < 8; ++j) sub[j * 64 + pos] = uint8_t(c(j));
    } else if constexpr (bits == 6) {
      for (int k = 0; k < 6; ++k) {
        const int quad = 6 + k / 3, piece = (c(quad) >> (2 * (k % 3))) & 3;
        sub[k * 64 + pos] = uint8_t((c(k) & 63) | piece << 6);
      }
    } else if constexpr (bits == 5) {
      sub[pos] = uint8_t((c(0) & 31) | (c(5) & 7) << 5);
      sub[64 + pos] = uint8_t((c(1) & 31) | (c(6) & 7) << 5);
      sub[128 + pos] = uint8_t((c(2) & 31) | (c(7) & 7) << 5);
      sub[192 + pos] = uint8_t((c(3) & 31) | ((c(5) >> 3) & 3) << 5 | ((c(7) >> 3) & 1) << 7);
      sub[256 + pos] = uint8_t((c(4) & 31) | ((c(6) >> 3) & 3) << 5 | ((c(7) >> 4) & 1) << 7);
    } else if constexpr (bits == 4) {
      for (int j = 0; j < 4; ++j) sub[j * 64 + pos] = uint8_t((c(j) & 15) | (c(j + 4) & 15) << 4);
    } else if constexpr (bits == 3) {
      sub[pos] = uint8_t((c(0) & 7) | (c(1) & 7) << 3 | (c(6) & 3) << 6);
      sub[64 + pos] = uint8_t((c(2) & 7) | (c(3) & 7) << 3 | (c(7) & 3) << 6);
      sub[128 + pos] = uint8_t((c(4) & 7) | (c(5) & 7) << 3 | ((c(6) >> 2) & 1) << 6 | ((c(7) >> 2) & 1) << 7);
    } else {
      for (int h = 0; h < 2; ++h) {
        unsigned p = 0;
        for (int i = 0; i < 4; ++i) p |= (c(4 * h + i) & 3) << (2 * i);
        sub[64 * h + pos] = uint8_t(p);
      }
    }
  }
}

// Reads row r's 32 codes of a sub-block (the inverse of put_codes).
template <int bits>
inline void get_codes(const uint8_t* sub, int r, uint8_t* code) {
  for (int k = 0; k < kSub; ++k) code[k] = uint8_t(get_code<bits>(sub, r, k));
}

// Calls f(std::integral_constant<int, bits>{}) for a run-time code width.
template <class F>
inline void with_bits(int bits, F&& f) {
  switch (bits) {
    case 8: return f(std::integral_constant<int, 8>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 3: return f(std::integral_constant<int, 3>{});
    default: return f(std::integral_constant<int, 2>{});
  }
}

}  // namespace tinfer::packed

// The packed formats: one row per quantized weight type that the int8 GEMMs consume. A row is the
// type, its Geometry (packed_layout.h: block, code bits, code offset, arithmetic family, scale fields)
// and the two functions that move one GGUF block in and out of it. pack_matrix / unpack_row walk these
// rows; every kernel table holds one GEMM per row (KernelTable::gemm, indexed by Fmt), instantiated from
// the row's Geometry. Adding a type = one row here + its decode/dequant in packed_format.cpp, plus a
// micro-kernel branch (cpu/common/gemm_q.h for AVX2 and AVX-512, cpu/generic) only if its arithmetic
// family (Scales) or code width is new.
#pragma once
#include <cstdint>

#include "kernels/packed_layout.h"
#include "quant/blocks.h"
#include "quant/dtype.h"

namespace tinfer::packed {

enum class Fmt : uint8_t { q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k };

// One GGUF block of one row, in packed terms: its codes (element order) and its scale fields as the
// tile block stores them (fp16 bits for d/m, bytes for the sub-block scales and mins).
struct BlockFields {
  uint8_t code[256];
  uint8_t sc[16];
  uint8_t mn[8];
  uint16_t d;
  uint16_t m;
};

using DecodeFn = void (*)(const void* block, BlockFields& f);
using DequantFn = void (*)(const BlockFields& f, float* out);  // bit-exact with the type table's to_float

struct PackedFormat {
  Fmt fmt;
  DType type;
  int gguf_bytes;  // bytes of one GGUF block (g.block elements)
  Geometry g;
  DecodeFn decode;
  DequantFn dequant;
};

namespace detail {
void decode_q8_0(const void*, BlockFields&);
void dequant_q8_0(const BlockFields&, float*);
void decode_q4_0(const void*, BlockFields&);
void dequant_q4_0(const BlockFields&, float*);
void decode_q4_1(const void*, BlockFields&);
void dequant_q4_1(const BlockFields&, float*);
void decode_q5_0(const void*, BlockFields&);
void dequant_q5_0(const BlockFields&, float*);
void decode_q5_1(const void*, BlockFields&);
void dequant_q5_1(const BlockFields&, float*);
void decode_q2_k(const void*, BlockFields&);
void dequant_q2_k(const BlockFields&, float*);
void decode_q3_k(const void*, BlockFields&);
void dequant_q3_k(const BlockFields&, float*);
void decode_q5_k(const void*, BlockFields&);
void dequant_q5_k(const BlockFields&, float*);
void decode_q4_k(const void*, BlockFields&);
void dequant_q4_k(const BlockFields&, float*);
void decode_q6_k(const void*, BlockFields&);
void dequant_q6_k(const BlockFields&, float*);
}  // namespace detail

// Row: format, type, GGUF block bytes, Geometry {block, bits, corr, scales, group, scale_bytes, d_at, m_at,
// sc_at, mn_at}, decode, dequant.
inline constexpr PackedFormat kFormats[] = {
    // 2 blocks per 64-byte scale line: [16 d of block 2i | 16 d of block 2i+1][quants 2i][quants 2i+1]
    {Fmt::q8_0, DType::Q8_0, sizeof(BlockQ8_0), {32, 8, -128, Scales::d, 2, 32, 0}, detail::decode_q8_0, detail::dequant_q8_0},
    {Fmt::q4_0, DType::Q4_0, sizeof(BlockQ4_0), {32, 4, -8, Scales::d, 2, 32, 0}, detail::decode_q4_0, detail::dequant_q4_0},
    // 1 block per line: [16 d | 16 m][quants]
    {Fmt::q4_1, DType::Q4_1, sizeof(BlockQ4_1), {32, 4, 0, Scales::d_m, 1, 64, 0, 32}, detail::decode_q4_1, detail::dequant_q4_1},
    // as Q4_0 / Q4_1, plus the plane of fifth bits after each block's nibbles
    {Fmt::q5_0, DType::Q5_0, sizeof(BlockQ5_0), {32, 5, -16, Scales::d, 2, 32, 0}, detail::decode_q5_0, detail::dequant_q5_0},
    {Fmt::q5_1, DType::Q5_1, sizeof(BlockQ5_1), {32, 5, 0, Scales::d_m, 1, 64, 0, 32}, detail::decode_q5_1, detail::dequant_q5_1},
    // K-quants: one 256-element super-block per tile block; 6-bit sub-block scales/mins kept as bytes.
    // [16 d | 16 dmin | b[8][16][2] = sc | mn << 4 (as GGUF)] (5 lines) [2-bit codes]: 84 B / 256 (= GGUF)
    {Fmt::q2_k, DType::Q2_K, sizeof(BlockQ2_K), {256, 2, 0, Scales::k_scmn16, 1, 320, 0, 32, 64}, detail::decode_q2_k,
     detail::dequant_q2_k},
    // 2 per scale region: [sc - 32 [8][16][2] s8 | 16 d] x 2 (9 lines) [3-bit codes] x 2: 114 B / 256 (GGUF 110)
    {Fmt::q3_k, DType::Q3_K, sizeof(BlockQ3_K), {256, 3, -4, Scales::k_sc16, 2, 288, 256, -1, 0}, detail::decode_q3_k,
     detail::dequant_q3_k},
    // [16 d | 16 dmin | sc[8][16] | mn[8][16]] (5 lines) [nibble codes]: 148 B / 256 (GGUF 144)
    {Fmt::q4_k, DType::Q4_K, sizeof(BlockQ4_K), {256, 4, 0, Scales::k_sc_mn, 1, 320, 0, 32, 64, 192}, detail::decode_q4_k,
     detail::dequant_q4_k},
    // as Q4_K with 5-bit codes: 180 B / 256 (GGUF 176)
    {Fmt::q5_k, DType::Q5_K, sizeof(BlockQ5_K), {256, 5, 0, Scales::k_sc_mn, 1, 320, 0, 32, 64, 192}, detail::decode_q5_k,
     detail::dequant_q5_k},
    // 2 per scale region: [sc[8][16][2] s8 | 16 d] x 2 (9 lines) [6-bit codes] x 2: 210 B / 256 (= GGUF)
    {Fmt::q6_k, DType::Q6_K, sizeof(BlockQ6_K), {256, 6, -32, Scales::k_sc16, 2, 288, 256, -1, 0}, detail::decode_q6_k,
     detail::dequant_q6_k},
};
inline constexpr int kNumFormats = int(sizeof(kFormats) / sizeof(kFormats[0]));

constexpr const PackedFormat& format(Fmt f) { return kFormats[int(f)]; }
// The row packing `t`, or nullptr when `t` is not a packed (tiled) type.
constexpr const PackedFormat* find_format(DType t) {
  for (const PackedFormat& f : kFormats)
    if (f.type == t) return &f;
  return nullptr;
}

// Rows are in Fmt order (the kernel tables index by it).
constexpr bool rows_in_order() {
  for (int i = 0; i < kNumFormats; ++i)
    if (int(kFormats[i].fmt) != i) return false;
  return true;
}
static_assert(rows_in_order());

}  // namespace tinfer::packed

// The ISA-independent packed layout of the 32-block quantized types (Q8_0, Q4_0, Q4_1).
// Rows are grouped in tiles of 16 (the last tile zero-padded). A tile of nb blocks is
//   scale region: per block, 16 fp16 d (Q4_1: then 16 fp16 m), padded to a multiple of 64 bytes;
//   quants:       per block, 8 "k-quads" of 64 bytes: quad j = [r0 k4j..4j+3, r1 ..., r15 ...].
// Q8_0 stores q ^ 0x80 (= q + 128 as u8, so vpdpbusd takes weights as the unsigned operand; the
// +128 is removed with -128 * sum(activation q)). Q4_0/Q4_1 keep 4 bits: 4 chunks of 64 bytes per
// block, chunk c = quad c in the low nibbles and quad c+4 (elements 16+4c..) in the high nibbles.
#pragma once
#include <cstdint>

#include "quant/dtype.h"

namespace tinfer::packed {

constexpr int kTileRows = 16;

inline bool is_tiled(DType t) { return t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q4_1; }
inline int64_t n_tiles(int64_t rows) { return (rows + kTileRows - 1) / kTileRows; }
// Bytes of the per-block scales of one tile block (16 d, plus 16 m for Q4_1).
inline int64_t block_scale_bytes(DType t) { return t == DType::Q4_1 ? 64 : 32; }
// Bytes of the per-block quants of one tile block.
inline int64_t block_quant_bytes(DType t) { return t == DType::Q8_0 ? 512 : 256; }
inline int64_t scale_region_bytes(DType t, int64_t nb) { return (nb * block_scale_bytes(t) + 63) / 64 * 64; }
inline int64_t tile_bytes(DType t, int64_t nb) { return scale_region_bytes(t, nb) + nb * block_quant_bytes(t); }

}  // namespace tinfer::packed

// The ISA-independent packed layout of the 32-block quantized types (Q8_0, Q4_0, Q4_1).
// Rows are grouped in tiles of 16 (the last tile zero-padded). A tile of nb blocks is a sequence of
// block groups, each one 64-byte scale line followed by the quants of its blocks:
//   Q8_0, Q4_0: 2 blocks per group: [16 fp16 d of block 2i, 16 of block 2i+1][quants 2i][quants 2i+1]
//   Q4_1:       1 block per group:  [16 fp16 d, 16 fp16 m][quants]
// (an odd block count leaves the last group's second block zero). Quants per block are 8 "k-quads"
// of 64 bytes: quad j = [r0 k4j..4j+3, r1 ..., r15 ...]. Q8_0 stores q ^ 0x80 (= q + 128 as u8, so
// vpdpbusd takes weights as the unsigned operand; the +128 is removed with -128 * sum(activation q)).
// Q4_0/Q4_1 keep 4 bits: 4 chunks of 64 bytes per block, chunk c = quad c in the low nibbles and
// quad c+4 (elements 16+4c..) in the high nibbles.
// Why scales sit between the quants: a decode step streams each tile once, and one sequential stream
// is what the hardware prefetchers follow best. With all of a tile's scales in a region ahead of its
// quants (the previous layout) the Q4_0/Q8_0 GEMV reached 0.86-0.92 of a plain read loop on Zen 4;
// interleaved, 1.00-1.04 in both of the host's memory modes (scratch micro-benchmark, 1 GiB, 2 threads).
#pragma once
#include <cstdint>

#include "quant/dtype.h"

namespace tinfer::packed {

constexpr int kTileRows = 16;
constexpr int64_t kScaleLine = 64;

constexpr bool is_tiled(DType t) { return t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q4_1; }
constexpr int64_t n_tiles(int64_t rows) { return (rows + kTileRows - 1) / kTileRows; }
// Bytes of the per-block scales of one tile block (16 d, plus 16 m for Q4_1).
constexpr int64_t block_scale_bytes(DType t) { return t == DType::Q4_1 ? 64 : 32; }
// Bytes of the per-block quants of one tile block.
constexpr int64_t block_quant_bytes(DType t) { return t == DType::Q8_0 ? 512 : 256; }
constexpr int64_t blocks_per_group(DType t) { return kScaleLine / block_scale_bytes(t); }
constexpr int64_t group_bytes(DType t) { return kScaleLine + blocks_per_group(t) * block_quant_bytes(t); }
constexpr int64_t tile_bytes(DType t, int64_t nb) {
  return (nb + blocks_per_group(t) - 1) / blocks_per_group(t) * group_bytes(t);
}
// Offsets inside a tile of block b's scales and quants.
constexpr int64_t scale_offset(DType t, int64_t b) {
  return b / blocks_per_group(t) * group_bytes(t) + b % blocks_per_group(t) * block_scale_bytes(t);
}
constexpr int64_t quant_offset(DType t, int64_t b) {
  return b / blocks_per_group(t) * group_bytes(t) + kScaleLine + b % blocks_per_group(t) * block_quant_bytes(t);
}

}  // namespace tinfer::packed

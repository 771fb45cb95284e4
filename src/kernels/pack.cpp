// pack_matrix / unpack_row: GGUF row-major blocks <-> the packed layouts (packed_layout.h for the
// 32-block types; plain GGUF rows for the float types and K-quants).
#include <cstring>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/kernels.h"
#include "kernels/packed_layout.h"
#include "quant/blocks.h"
#include "quant/type_table.h"

namespace tinfer {

namespace {

bool supported(DType t) {
  switch (t) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::Q8_0:
    case DType::Q4_0: case DType::Q4_1: case DType::Q4_K: case DType::Q6_K: return true;
    default: return false;
  }
  return false;
}

// Writes one GGUF block of row r (r < 16 within its tile) into the tile at block b.
template <class Block>
void put_block(DType t, const Block& blk, int r, int64_t b, uint8_t* tile) {
  auto* scales = reinterpret_cast<uint16_t*>(tile + packed::scale_offset(t, b));
  scales[r] = blk.d;
  uint8_t* qb = tile + packed::quant_offset(t, b);
  if constexpr (sizeof(Block) == sizeof(BlockQ8_0)) {
    for (int k = 0; k < kQK; ++k) qb[(k / 4) * 64 + r * 4 + k % 4] = uint8_t(blk.qs[k]) ^ 0x80;
  } else {
    if constexpr (sizeof(Block) == sizeof(BlockQ4_1)) scales[16 + r] = blk.m;
    // GGUF byte k (k<16): low nibble = element k, high = element k+16; element k sits in quad k/4,
    // which is chunk k/4 (k<16): the same byte, so the bytes only move.
    for (int k = 0; k < kQK / 2; ++k) qb[(k / 4) * 64 + r * 4 + k % 4] = blk.qs[k];
  }
}

template <class Block>
void pack_tiled(DType t, const uint8_t* src, int64_t rows, int64_t nb, uint8_t* dst) {
  const int64_t tb = packed::tile_bytes(t, nb);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* tile = dst + (r / packed::kTileRows) * tb;
    const Block* blocks = reinterpret_cast<const Block*>(src) + r * nb;
    for (int64_t b = 0; b < nb; ++b)
      put_block(t, blocks[b], int(r % packed::kTileRows), b, tile);
  }
}

template <class Block>
void unpack_tiled(const PackedMatrix& w, int64_t r, float* dst) {
  const DType t = w.type;
  const int64_t nb = w.cols / kQK, tb = packed::tile_bytes(t, nb);
  const uint8_t* tile = w.data.data() + (r / packed::kTileRows) * tb;
  const int rr = int(r % packed::kTileRows);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qb = tile + packed::quant_offset(t, b);
    const auto* scales = reinterpret_cast<const uint16_t*>(tile + packed::scale_offset(t, b));
    const float d = fp16_to_f32(scales[rr]);
    float* out = dst + b * kQK;
    for (int k = 0; k < kQK; ++k) {
      if constexpr (sizeof(Block) == sizeof(BlockQ8_0)) {
        out[k] = d * float(int8_t(qb[(k / 4) * 64 + rr * 4 + k % 4] ^ 0x80));
      } else {
        const int kk = k % 16;
        const uint8_t byte = qb[(kk / 4) * 64 + rr * 4 + kk % 4];
        const int q = k < 16 ? (byte & 15) : (byte >> 4);
        if constexpr (sizeof(Block) == sizeof(BlockQ4_1))
          out[k] = d * float(q) + fp16_to_f32(scales[16 + rr]);
        else
          out[k] = d * float(q - 8);
      }
    }
  }
}

}  // namespace

PackedMatrix pack_matrix(DType type, const void* src, int64_t rows, int64_t cols) {
  check(supported(type), "pack_matrix: unsupported type id " + std::to_string(uint32_t(type)));
  check(rows > 0 && cols > 0, "pack_matrix: empty matrix");
  const size_t rb = row_bytes(type, cols);  // throws when cols is not a multiple of the block
  PackedMatrix w;
  w.type = type;
  w.rows = rows;
  w.cols = cols;
  const auto* s = static_cast<const uint8_t*>(src);
  if (!packed::is_tiled(type)) {
    w.data = Buffer(rb * size_t(rows), true);
    std::memcpy(w.data.data(), s, rb * size_t(rows));
    return w;
  }
  const int64_t nb = cols / kQK;
  w.data = Buffer(size_t(packed::n_tiles(rows) * packed::tile_bytes(type, nb)), true);
  if (type == DType::Q8_0) pack_tiled<BlockQ8_0>(type, s, rows, nb, w.data.data());
  if (type == DType::Q4_0) pack_tiled<BlockQ4_0>(type, s, rows, nb, w.data.data());
  if (type == DType::Q4_1) pack_tiled<BlockQ4_1>(type, s, rows, nb, w.data.data());
  return w;
}

void unpack_row(const PackedMatrix& w, int64_t r, float* dst) {
  check(r >= 0 && r < w.rows, "unpack_row: row out of range");
  switch (w.type) {
    case DType::Q8_0: return unpack_tiled<BlockQ8_0>(w, r, dst);
    case DType::Q4_0: return unpack_tiled<BlockQ4_0>(w, r, dst);
    case DType::Q4_1: return unpack_tiled<BlockQ4_1>(w, r, dst);
    default: break;
  }
  const size_t rb = row_bytes(w.type, w.cols);
  type_traits(w.type).to_float(w.data.data() + rb * size_t(r), dst, w.cols);
}

}  // namespace tinfer

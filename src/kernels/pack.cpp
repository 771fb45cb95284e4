// pack_matrix / unpack_row: GGUF row-major blocks <-> the packed tiles (packed_layout.h), through the
// format rows of packed_format.h; the float types stay plain GGUF rows.
#include <cstring>

#include "tinfer/error.h"
#include "kernels/kernels.h"
#include "kernels/packed_format.h"
#include "quant/type_table.h"

namespace tinfer {

namespace {

// Types kept as plain GGUF rows (matmul dequantizes them row by row).
bool row_layout(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

int n_sc(const packed::Geometry& g) { return g.sc_at < 0 ? 0 : g.block / (g.sub16() ? 16 : 32); }
int n_mn(const packed::Geometry& g) { return g.mn_at < 0 ? 0 : g.block / 32; }

// Writes row r's (r < 16) block b of a tile, and reads it back.
template <int bits>
void put_block(const packed::Geometry& g, const packed::BlockFields& f, int r, int64_t b, uint8_t* tile) {
  uint8_t* sc = tile + g.scale_offset(b);
  if (g.d_at >= 0) std::memcpy(sc + g.d_at + 2 * r, &f.d, 2);
  if (g.m_at >= 0) std::memcpy(sc + g.m_at + 2 * r, &f.m, 2);
  for (int s = 0; s < n_sc(g); ++s) sc[g.sc_at + g.sc_index(s, r)] = f.sc[s];
  for (int s = 0; s < n_mn(g); ++s) sc[g.mn_at + 16 * s + r] = f.mn[s];
  uint8_t* q = tile + g.quant_offset(b);
  for (int s = 0; s < g.subs(); ++s) packed::put_codes<bits>(q + s * g.sub_bytes(), r, f.code + packed::kSub * s);
}

template <int bits>
void get_block(const packed::Geometry& g, const uint8_t* tile, int r, int64_t b, packed::BlockFields& f) {
  const uint8_t* sc = tile + g.scale_offset(b);
  if (g.d_at >= 0) std::memcpy(&f.d, sc + g.d_at + 2 * r, 2);
  if (g.m_at >= 0) std::memcpy(&f.m, sc + g.m_at + 2 * r, 2);
  for (int s = 0; s < n_sc(g); ++s) f.sc[s] = sc[g.sc_at + g.sc_index(s, r)];
  for (int s = 0; s < n_mn(g); ++s) f.mn[s] = sc[g.mn_at + 16 * s + r];
  const uint8_t* q = tile + g.quant_offset(b);
  for (int s = 0; s < g.subs(); ++s) packed::get_codes<bits>(q + s * g.sub_bytes(), r, f.code + packed::kSub * s);
}

}  // namespace

PackedMatrix pack_matrix(DType type, const void* src, int64_t rows, int64_t cols) {
  const packed::PackedFormat* pf = packed::find_format(type);
  check(pf || row_layout(type), "pack_matrix: unsupported type id " + std::to_string(uint32_t(type)));
  check(rows > 0 && cols > 0, "pack_matrix: empty matrix");
  check(cols % (pf ? pf->g.block : 1) == 0, "pack_matrix: " + std::to_string(cols) +
                                               " columns are not a multiple of the block size");
  const size_t rb = pf ? size_t(cols / pf->g.block * pf->gguf_bytes) : row_bytes(type, cols);
  PackedMatrix w;
  w.type = type;
  w.rows = rows;
  w.cols = cols;
  const auto* s = static_cast<const uint8_t*>(src);
  if (!pf) {
    w.data = Buffer(rb * size_t(rows), true);
    std::memcpy(w.data.data(), s, rb * size_t(rows));
    return w;
  }
  const packed::Geometry& g = pf->g;
  const int64_t nb = cols / g.block, tb = g.tile_bytes(nb);
  const size_t block_bytes = size_t(pf->gguf_bytes);
  w.data = Buffer(size_t(packed::n_tiles(rows) * tb), true);  // zero-filled: the padded rows of the last tile
  packed::with_bits(g.bits, [&](auto bits) {
    packed::BlockFields f{};
    for (int64_t r = 0; r < rows; ++r) {
      uint8_t* tile = w.data.data() + (r / packed::kTileRows) * tb;
      for (int64_t b = 0; b < nb; ++b) {
        pf->decode(s + size_t(r) * rb + size_t(b) * block_bytes, f);
        put_block<bits()>(g, f, int(r % packed::kTileRows), b, tile);
      }
    }
  });
  return w;
}

void unpack_row(const PackedMatrix& w, int64_t r, float* dst) {
  check(r >= 0 && r < w.rows, "unpack_row: row out of range");
  if (const packed::PackedFormat* pf = packed::find_format(w.type)) {
    const packed::Geometry& g = pf->g;
    const int64_t nb = w.cols / g.block;
    const uint8_t* tile = w.data.data() + (r / packed::kTileRows) * g.tile_bytes(nb);
    packed::with_bits(g.bits, [&](auto bits) {
      packed::BlockFields f{};
      for (int64_t b = 0; b < nb; ++b) {
        get_block<bits()>(g, tile, int(r % packed::kTileRows), b, f);
        pf->dequant(f, dst + b * g.block);
      }
    });
    return;
  }
  const size_t rb = row_bytes(w.type, w.cols);
  type_traits(w.type).to_float(w.data.data() + rb * size_t(r), dst, w.cols);
}

}  // namespace tinfer

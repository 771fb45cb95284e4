// pack_matrix / unpack_row: GGUF row-major blocks <-> the packed tiles (packed_layout.h), through the
// format rows of packed_format.h; the float types stay plain GGUF rows. Tiles are independent, so a pool
// packs them in parallel.
#include <algorithm>
#include <cstring>
#include <functional>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/pack.h"
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

// The source row r of a stack of parts (at most a few parts: a linear walk).
class PartRows {
 public:
  PartRows(std::span<const PackPart> parts, size_t row_bytes) : parts_(parts), rb_(row_bytes) {}
  const uint8_t* row(int64_t r) const {
    for (const PackPart& p : parts_) {
      if (r < p.rows) return static_cast<const uint8_t*>(p.data) + size_t(r) * rb_;
      r -= p.rows;
    }
    return nullptr;
  }

 private:
  std::span<const PackPart> parts_;
  size_t rb_;
};

// Runs fn(begin, end) over [0, n) items on the pool (work-stealing runs: a late thread costs only what it
// has not claimed), or inline without one.
void share(ThreadPool* pool, int64_t n, int64_t item, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool && pool->size() > 1 && n > 1) pool->parallel_for_runs(n, item, fn);
  else fn(0, n);
}

}  // namespace

PackedMatrix pack_matrix(DType type, const void* src, int64_t rows, int64_t cols) {
  const PackPart part{src, rows};
  return pack_matrix(type, std::span<const PackPart>(&part, 1), cols, nullptr);
}

PackedMatrix pack_matrix(DType type, std::span<const PackPart> parts, int64_t cols, ThreadPool* pool) {
  const packed::PackedFormat* pf = packed::find_format(type);
  check(pf || row_layout(type), "pack_matrix: unsupported type id " + std::to_string(uint32_t(type)));
  int64_t rows = 0;
  for (const PackPart& p : parts) {
    check(p.rows >= 0 && (p.rows == 0 || p.data), "pack_matrix: a part without data");
    rows += p.rows;
  }
  check(rows > 0 && cols > 0, "pack_matrix: empty matrix");
  check(cols % (pf ? pf->g.block : 1) == 0, "pack_matrix: " + std::to_string(cols) +
                                               " columns are not a multiple of the block size");
  const size_t rb = pf ? size_t(cols / pf->g.block * pf->gguf_bytes) : row_bytes(type, cols);
  const PartRows src(parts, rb);
  PackedMatrix w;
  w.type = type;
  w.rows = rows;
  w.cols = cols;
  if (!pf) {
    w.data = Buffer(rb * size_t(rows), true);
    const int64_t item = std::max<int64_t>(1, int64_t((size_t(1) << 20) / rb));  // ~1 MiB a piece
    share(pool, rows, item, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) std::memcpy(w.data.data() + size_t(r) * rb, src.row(r), rb);
    });
    return w;
  }
  const packed::Geometry& g = pf->g;
  const int64_t nb = cols / g.block, tb = g.tile_bytes(nb), tiles = packed::n_tiles(rows);
  const size_t block_bytes = size_t(pf->gguf_bytes);
  w.data = Buffer(size_t(tiles * tb), true);  // zero-filled: the padded rows of the last tile
  // Each tile is written by one thread (its pages are first touched there, so faults are shared out too).
  share(pool, tiles, std::max<int64_t>(1, (int64_t(1) << 20) / tb), [&](int64_t t0, int64_t t1) {
    packed::with_bits(g.bits, [&](auto bits) {
      packed::BlockFields f{};
      for (int64_t t = t0; t < t1; ++t) {
        uint8_t* tile = w.data.data() + t * tb;
        const int64_t r_end = std::min(rows, (t + 1) * packed::kTileRows);
        for (int64_t r = t * packed::kTileRows; r < r_end; ++r) {
          const uint8_t* row = src.row(r);
          for (int64_t b = 0; b < nb; ++b) {
            pf->decode(row + size_t(b) * block_bytes, f);
            put_block<bits()>(g, f, int(r % packed::kTileRows), b, tile);
          }
        }
      }
    });
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

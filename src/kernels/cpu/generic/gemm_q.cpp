// Generic (plain C++) quantized GEMM on the 16-row tile layout of packed_layout.h: the portable
// fallback and a readable statement of what the SIMD kernels compute.
#include <algorithm>
#include <cstring>

#include "core/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_layout.h"

namespace tinfer {
namespace {

enum class Kind { q8_0, q4_0, q4_1 };

// y[tile rows] for one tile and row r of activation group g.
template <Kind K>
void tile_row(const uint8_t* tile, const QActs& a, int64_t g, int r0, float* y, int valid) {
  constexpr DType type = K == Kind::q8_0 ? DType::Q8_0 : K == Kind::q4_0 ? DType::Q4_0 : DType::Q4_1;
  float acc[16] = {};
  for (int64_t b = 0; b < a.nb; ++b) {
    const uint8_t* blk = a.block(g, b);
    const int8_t* q = a.q(blk, r0);
    const uint8_t* qb = tile + packed::quant_offset(type, b);
    const auto* scales = reinterpret_cast<const uint16_t*>(tile + packed::scale_offset(type, b));
    int32_t isum[16];
    for (int r = 0; r < 16; ++r) isum[r] = *a.off(blk, r0);  // corr * sum(q)
    if constexpr (K == Kind::q8_0) {
      for (int j = 0; j < 8; ++j)
        for (int r = 0; r < 16; ++r)
          for (int u = 0; u < 4; ++u) isum[r] += int(qb[j * 64 + r * 4 + u]) * q[4 * j + u];
    } else {
      for (int c = 0; c < 4; ++c)
        for (int r = 0; r < 16; ++r)
          for (int u = 0; u < 4; ++u) {
            const int byte = qb[c * 64 + r * 4 + u];
            isum[r] += (byte & 15) * q[4 * c + u] + (byte >> 4) * q[16 + 4 * c + u];
          }
    }
    const float da = *a.d(blk, r0);
    for (int r = 0; r < 16; ++r) {
      acc[r] += fp16_to_f32(scales[r]) * da * float(isum[r]);
      if constexpr (K == Kind::q4_1) acc[r] += fp16_to_f32(scales[16 + r]) * *a.ds(blk, r0);
    }
  }
  std::memcpy(y, acc, sizeof(float) * size_t(valid));
}

template <Kind K>
void gemm(const GemmArgs& g, int64_t t0, int64_t t1, int64_t i0, int64_t i1) {
  for (int64_t t = t0; t < t1; ++t) {
    const int valid = int(std::min<int64_t>(packed::kTileRows, g.rows - t * packed::kTileRows));
    for (int64_t i = i0; i < i1; ++i)
      tile_row<K>(g.w + t * g.tile_bytes, g.a, i / kActGroup, int(i % kActGroup),
                  g.y + i * g.ldy + t * packed::kTileRows, valid);
  }
}

}  // namespace

GemmFn generic_gemm_q8_0() { return gemm<Kind::q8_0>; }
GemmFn generic_gemm_q4_0() { return gemm<Kind::q4_0>; }
GemmFn generic_gemm_q4_1() { return gemm<Kind::q4_1>; }

}  // namespace tinfer

// Generic (plain C++) quantized GEMM on the 16-row tile layout of packed_layout.h, one instantiation per
// packed format: the portable fallback and a readable statement of what the SIMD kernels compute.
#include <algorithm>
#include <cstring>
#include <utility>

#include "core/fp16.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_format.h"

namespace tinfer {
namespace {

using packed::Geometry;
using packed::Scales;

// Per-row multipliers of one sub-block (s: of the int dot; m: of the activation sums), halves lo/hi for
// 16-element scales.
struct SubScale {
  float s[2], m[2];
};

template <Geometry G>
SubScale sub_scale(const uint8_t* sc, int r, int s) {
  float d, m = 0;
  uint16_t h;
  std::memcpy(&h, sc + G.d_at + 2 * r, 2);
  d = fp16_to_f32(h);
  if constexpr (G.m_at >= 0) {
    std::memcpy(&h, sc + G.m_at + 2 * r, 2);
    m = fp16_to_f32(h);
  }
  SubScale o{};
  if constexpr (G.scales == Scales::d) {
    o.s[0] = d;
  } else if constexpr (G.scales == Scales::d_m) {
    o.s[0] = d, o.m[0] = m;
  } else if constexpr (G.scales == Scales::k_sc_mn) {
    o.s[0] = d * float(sc[G.sc_at + G.sc_index(s, r)]);
    o.m[0] = -m * float(sc[G.mn_at + 16 * s + r]);
  } else if constexpr (G.scales == Scales::k_sc16) {
    for (int h2 = 0; h2 < 2; ++h2) o.s[h2] = d * float(int8_t(sc[G.sc_at + G.sc_index(2 * s + h2, r)]));
  } else {
    for (int h2 = 0; h2 < 2; ++h2) {
      const uint8_t b = sc[G.sc_at + G.sc_index(2 * s + h2, r)];
      o.s[h2] = d * float(b & 15);
      o.m[h2] = -m * float(b >> 4);
    }
  }
  return o;
}

// y[i][tile rows] for tiles [t0, t1), activation rows [i0, i1).
template <Geometry G>
void gemm(const GemmArgs& ga, int64_t t0, int64_t t1, int64_t i0, int64_t i1) {
  const QActs& a = ga.a;
  const int64_t nb = a.nb / G.subs();
  float acc[kMaxGemmRows][16];
  for (int64_t t = t0; t < t1; ++t) {
    const int valid = int(std::min<int64_t>(packed::kTileRows, ga.rows - t * packed::kTileRows));
    const uint8_t* tile = ga.w + t * ga.tile_bytes;
    std::memset(acc, 0, sizeof acc);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* sc = tile + G.scale_offset(b);
      for (int s = 0; s < G.subs(); ++s) {
        const uint8_t* q = tile + G.quant_offset(b) + s * G.sub_bytes();
        for (int r = 0; r < valid; ++r) {
          int code[32];
          for (int k = 0; k < 32; ++k) code[k] = packed::get_code<G.bits>(q, r, k);
          const SubScale ss = sub_scale<G>(sc, r, s);
          for (int64_t i = i0; i < i1; ++i) {
            const uint8_t* blk = a.block(i / kActGroup, b * G.subs() + s);
            const int ri = int(i % kActGroup);
            const int8_t* x = a.q(blk, ri);
            const int16_t* s16 = a.s16(blk, ri);
            const float da = *a.d(blk, ri);
            // Int dots of the two 16-element halves, each starting from the codes' offset corr * sum(q).
            int32_t isum[2] = {G.corr * s16[0], G.corr * s16[1]};
            for (int k = 0; k < 32; ++k) isum[k / 16] += code[k] * x[k];
            float& out = acc[i - i0][r];
            if constexpr (G.sub16()) {
              for (int h = 0; h < 2; ++h) {
                out += ss.s[h] * da * float(isum[h]);
                if constexpr (G.scales == Scales::k_scmn16) out += ss.m[h] * (da * float(s16[h]));
              }
            } else {
              out += ss.s[0] * da * float(isum[0] + isum[1]);
              if constexpr (G.scales == Scales::d_m || G.scales == Scales::k_sc_mn) out += ss.m[0] * *a.ds(blk, ri);
            }
          }
        }
      }
    }
    for (int64_t i = i0; i < i1; ++i)
      std::memcpy(ga.y + i * ga.ldy + t * packed::kTileRows, acc[i - i0], sizeof(float) * size_t(valid));
  }
}

}  // namespace

std::array<GemmFn, packed::kNumFormats> generic_gemms() {
  return gemms_per_format([]<Geometry G>() -> GemmFn { return gemm<G>; });
}

}  // namespace tinfer

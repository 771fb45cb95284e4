// The KV cache's byte format (kernels/kv_quant.h), pinned: exact codes and fp16 scale bits of the int8 and
// int4 quantizers on fixed inputs (worked out by hand below), every byte kv_write_token writes at the
// offset the layout comment names (and no other byte), round-trip error bounds, degenerate vectors, and
// concurrent writes to the slots of one block.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/fp16.h"
#include "kernels/kv_quant.h"

namespace tinfer {
namespace {

constexpr KvDtype kAll[] = {KvDtype::f32, KvDtype::f16, KvDtype::int8, KvDtype::int4};

// x = {1, -0.5, 0.25, 2.54, -2.54, 0, 0.01, 1.27, -1.9}: max|x| = 2.54, scale = 2.54 / 127 = 0.02, whose
// fp16 from above is 1.2802734375 * 2^-6 = 0.0200042724609375 (exponent 9, mantissa 287: bits 0x251F). The
// codes are round(x / 0.0200042724609375): 49.989 -> 50, -24.995 -> -25, 12.497 -> 12, 126.97 -> 127,
// -127, 0, 0.4999 -> 0, 63.486 -> 63, -94.98 -> -95.
TEST(KvQuant, Int8ExactCodesAndScale) {
  const float x[] = {1.f, -0.5f, 0.25f, 2.54f, -2.54f, 0.f, 0.01f, 1.27f, -1.9f};
  int8_t codes[9];
  uint16_t scale = 0;
  kv_quantize_int8(x, 9, codes, &scale);
  EXPECT_EQ(scale, 0x251F);
  const int8_t want[] = {50, -25, 12, 127, -127, 0, 0, 63, -95};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(codes[i], want[i]) << i;
}

// y = {-1, 0, 0.5, 2, 1.3, -0.2, 0.61}: min = -1 (fp16 0xBC00), scale = 3 / 15 = 0.2, whose fp16 from
// above is 0.2000732421875 (0x3267; the nearest, 0x3266 = 0.19995, is below). Codes round((y + 1) /
// 0.2000732421875): 0, 4.998 -> 5, 7.497 -> 7, 14.995 -> 15, 11.496 -> 11, 3.999 -> 4, 8.047 -> 8.
TEST(KvQuant, Int4ExactCodesScaleAndMin) {
  const float y[] = {-1.f, 0.f, 0.5f, 2.f, 1.3f, -0.2f, 0.61f};
  uint8_t codes[7];
  uint16_t sm[2] = {};
  kv_quantize_int4(y, 7, codes, sm);
  EXPECT_EQ(sm[0], 0x3267);
  EXPECT_EQ(sm[1], 0xBC00);
  const uint8_t want[] = {0, 5, 7, 15, 11, 4, 8};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(codes[i], want[i]) << i;
}

// The scale is rounded up and the min down, so nothing is clamped: a small vector whose int8 scale is an
// fp16 subnormal (max|x| = 1e-3: 1e-3 / 127 = 7.87e-6, between subnormals 132 and 133 * 2^-24, nearest
// 132) gets 133 * 2^-24 and every value within half a step; an int4 vector of small range far from 0
// (1000.1 .. 1000.2, fp16 ulp 0.5 there) gets the min 1000 (not 1000.5, the nearest to 1000.3 would be)
// and stays within half a step too.
TEST(KvQuant, ScaleRoundsUpMinRoundsDown) {
  const float x[] = {1e-3f, -0.7e-3f, 0.3e-3f, -1e-3f};
  int8_t c8[4];
  uint16_t s = 0;
  kv_quantize_int8(x, 4, c8, &s);
  EXPECT_EQ(s, 133);
  for (int i = 0; i < 4; ++i) EXPECT_LE(std::fabs(fp16_to_f32(s) * c8[i] - x[i]), fp16_to_f32(s) / 2) << i;
  const float y[] = {1000.3f, 1000.4f, 1000.45f, 1000.35f};
  uint8_t c4[4];
  uint16_t sm[2];
  kv_quantize_int4(y, 4, c4, sm);
  EXPECT_EQ(fp16_to_f32(sm[1]), 1000.f);
  for (int i = 0; i < 4; ++i)
    EXPECT_LE(std::fabs(fp16_to_f32(sm[1]) + fp16_to_f32(sm[0]) * c4[i] - y[i]), fp16_to_f32(sm[0]) / 2 * (1 + 1e-5f)) << i;
}

// All-zero and constant vectors: zero gives scale 0 and codes 0; a constant gives int8 codes 127 and int4
// scale 0, codes 0 and the constant itself as the min (exact when it is an fp16 value), negative too.
TEST(KvQuant, ZeroAndConstantVectors) {
  std::vector<float> z(33, 0.f), c(33, 0.75f), n(33, -3.5f);
  std::vector<int8_t> c8(33, 99);
  std::vector<uint8_t> c4(33, 99);
  uint16_t s = 1, sm[2] = {1, 1};
  kv_quantize_int8(z.data(), 33, c8.data(), &s);
  EXPECT_EQ(s, 0);
  for (int8_t v : c8) EXPECT_EQ(v, 0);
  kv_quantize_int8(c.data(), 33, c8.data(), &s);  // every code 127 (the max), within half a step of 0.75
  for (int8_t v : c8) EXPECT_EQ(v, 127);
  EXPECT_LE(std::fabs(fp16_to_f32(s) * 127 - 0.75f), fp16_to_f32(s) / 2);
  kv_quantize_int4(z.data(), 33, c4.data(), sm);
  EXPECT_EQ(sm[0], 0);
  EXPECT_EQ(sm[1], 0);
  for (uint8_t v : c4) EXPECT_EQ(v, 0);
  for (const auto* vec : {&c, &n}) {
    kv_quantize_int4(vec->data(), 33, c4.data(), sm);
    EXPECT_EQ(sm[0], 0);
    EXPECT_EQ(fp16_to_f32(sm[1]), (*vec)[0]);
    for (uint8_t v : c4) EXPECT_EQ(v, 0);
  }
}

// The offsets of kernels/kv_quant.h's layout comment, computed here from the comment (not from the
// geometry): bytes per K element column, K rows, scale bytes.
struct Layout {
  int64_t nkv, hd, bs;
  KvDtype kt, vt;
  int64_t k_rows() const { return kt == KvDtype::int4 ? (hd + 1) / 2 : hd; }
  int64_t k_elem() const { return kt == KvDtype::f32 ? 4 : kt == KvDtype::f16 ? 2 : 1; }  // int4: a byte per (row, slot)
  int64_t k_scale() const { return kt == KvDtype::int8 ? 2 : kt == KvDtype::int4 ? 4 : 0; }
  int64_t v_head() const {
    return vt == KvDtype::f32 ? 4 * hd : vt == KvDtype::f16 ? 2 * hd : vt == KvDtype::int8 ? hd : (hd + 1) / 2;
  }
  int64_t v_scale() const { return vt == KvDtype::int8 ? 2 : vt == KvDtype::int4 ? 4 : 0; }
  // K: codes [nkv][k_rows][bs] then scales [nkv][bs][k_scale]. V: codes [bs][nkv][v_head] then scales [bs][nkv].
  int64_t k_code(int64_t h, int64_t row, int64_t slot) const { return ((h * k_rows() + row) * bs + slot) * k_elem(); }
  int64_t k_scales(int64_t h, int64_t slot) const { return nkv * k_rows() * bs * k_elem() + (h * bs + slot) * k_scale(); }
  int64_t k_bytes() const { return nkv * k_rows() * bs * k_elem() + nkv * bs * k_scale(); }
  int64_t v_code(int64_t slot, int64_t h) const { return (slot * nkv + h) * v_head(); }
  int64_t v_scales(int64_t slot, int64_t h) const { return bs * nkv * v_head() + (slot * nkv + h) * v_scale(); }
  int64_t v_bytes() const { return bs * nkv * (v_head() + v_scale()); }
};

// The bytes one (token, kv head) vector of type t should occupy: element i's bytes (f32/f16/int8) or
// packed nibble byte i (int4) in `codes`, scale data in `scale`; from the quantizers pinned above.
void expected_bytes(KvDtype t, const float* x, int64_t hd, std::vector<std::vector<uint8_t>>& codes,
                    std::vector<uint8_t>& scale) {
  codes.clear(), scale.clear();
  if (t == KvDtype::f32) {
    for (int64_t i = 0; i < hd; ++i) codes.emplace_back(4), std::memcpy(codes.back().data(), &x[i], 4);
  } else if (t == KvDtype::f16) {
    for (int64_t i = 0; i < hd; ++i) {
      const uint16_t h = f32_to_fp16(x[i]);
      codes.emplace_back(2), std::memcpy(codes.back().data(), &h, 2);
    }
  } else if (t == KvDtype::int8) {
    std::vector<int8_t> c(static_cast<size_t>(hd));
    uint16_t s;
    kv_quantize_int8(x, hd, c.data(), &s);
    for (int64_t i = 0; i < hd; ++i) codes.push_back({uint8_t(c[i])});
    scale.resize(2), std::memcpy(scale.data(), &s, 2);
  } else {
    std::vector<uint8_t> c(static_cast<size_t>(hd));
    uint16_t sm[2];
    kv_quantize_int4(x, hd, c.data(), sm);
    const int64_t h = (hd + 1) / 2;  // byte i: value i (low nibble), value i + h (high; 0 past the end)
    for (int64_t i = 0; i < h; ++i) codes.push_back({uint8_t(c[i] | (i + h < hd ? c[i + h] << 4 : 0))});
    scale.resize(4), std::memcpy(scale.data(), sm, 4);
  }
}

// For every K type x V type and several shapes (odd head_dim, several kv heads, block sizes 16 and 5):
// the geometry matches the comment's sizes, and writing one token into two slots of a block filled with
// a sentinel changes exactly the bytes the comment names, to exactly the quantizers' bytes.
TEST(KvQuant, WriteTokenPutsEveryByteWhereTheLayoutSays) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 2.f);
  for (KvDtype kt : kAll)
    for (KvDtype vt : kAll)
      for (auto [nkv, hd, bs] : {std::tuple<int64_t, int64_t, int64_t>{3, 7, 16}, {2, 64, 16}, {4, 9, 5}, {1, 1, 16}}) {
        SCOPED_TRACE(std::string(kv_dtype_name(kt)) + "/" + kv_dtype_name(vt) + " nkv " + std::to_string(nkv) +
                     " hd " + std::to_string(hd) + " bs " + std::to_string(bs));
        const Layout L{nkv, hd, bs, kt, vt};
        const KvLayerView g = kv_layer_geometry(kt, vt, nkv, hd, bs);
        ASSERT_EQ(g.k_block_bytes, L.k_bytes());
        ASSERT_EQ(g.v_block_bytes, L.v_bytes());
        std::vector<uint8_t> kb(size_t(L.k_bytes()), 0xA5), vb(size_t(L.v_bytes()), 0xA5);
        std::vector<uint8_t> kwant = kb, vwant = vb;
        for (int64_t slot : {int64_t(0), bs - 1}) {
          std::vector<float> k(size_t(nkv * hd)), v(size_t(nkv * hd));
          for (auto& x : k) x = nd(rng);
          for (auto& x : v) x = nd(rng);
          kv_write_token(g, nkv, hd, kb.data(), vb.data(), slot, k.data(), v.data());
          std::vector<std::vector<uint8_t>> codes;
          std::vector<uint8_t> scale;
          for (int64_t h = 0; h < nkv; ++h) {
            expected_bytes(kt, k.data() + h * hd, hd, codes, scale);
            for (size_t r = 0; r < codes.size(); ++r)
              std::memcpy(&kwant[size_t(L.k_code(h, int64_t(r), slot))], codes[r].data(), codes[r].size());
            std::memcpy(&kwant[size_t(L.k_scales(h, slot))], scale.data(), scale.size());
            expected_bytes(vt, v.data() + h * hd, hd, codes, scale);
            for (size_t i = 0; i < codes.size(); ++i)
              std::memcpy(&vwant[size_t(L.v_code(slot, h)) + i * codes[i].size()], codes[i].data(), codes[i].size());
            std::memcpy(&vwant[size_t(L.v_scales(slot, h))], scale.data(), scale.size());
          }
        }
        for (size_t i = 0; i < kb.size(); ++i) ASSERT_EQ(int(kb[i]), int(kwant[i])) << "K byte " << i;
        for (size_t i = 0; i < vb.size(); ++i) ASSERT_EQ(int(vb[i]), int(vwant[i])) << "V byte " << i;
      }
}

// Round trip through the reference reads: int8 and int4 within half a step (scale / 2) of every value (a
// little float slack), f16 within half an fp16 ulp, f32 exact; on random vectors of several scales (1e-3:
// int8 scales in fp16's subnormal range).
TEST(KvQuant, RoundTripWithinHalfAStep) {
  const int64_t nkv = 2, bs = 16;
  std::mt19937 rng(11);
  for (int64_t hd : {int64_t(5), int64_t(64), int64_t(128)})
    for (float sigma : {1e-3f, 1.f, 300.f})
      for (KvDtype t : kAll) {
        SCOPED_TRACE(std::string(kv_dtype_name(t)) + " hd " + std::to_string(hd) + " sigma " + std::to_string(sigma));
        KvLayerView g = kv_layer_geometry(t, t, nkv, hd, bs);
        std::vector<uint8_t> kb(size_t(g.k_block_bytes)), vb(size_t(g.v_block_bytes));
        g.k = kb.data(), g.v = vb.data();
        std::normal_distribution<float> nd(0.5f * sigma, sigma);
        std::vector<std::vector<float>> K, V;
        for (int64_t j = 0; j < bs; ++j) {
          K.emplace_back(size_t(nkv * hd)), V.emplace_back(size_t(nkv * hd));
          for (auto& x : K.back()) x = nd(rng);
          for (auto& x : V.back()) x = nd(rng);
          kv_write_token(g, nkv, hd, kb.data(), vb.data(), j, K.back().data(), V.back().data());
        }
        // Half a step of value xi: int8/int4 half the stored fp16 scale (at the layout's offset; a little
        // float slack), f16 half an ulp, f32 exact. The step itself is bounded by the range: the scale
        // is at most max|x| / 127 (int8), (max - min) / 15 (int4), plus one fp16 rounding.
        auto bound = [&](const uint8_t* scale_at, const float* x, float xi) {
          if (t == KvDtype::f32) return 0.f;
          if (t == KvDtype::f16) return std::fabs(xi) * (1.f / 2048) + 3e-8f;
          uint16_t s16;
          std::memcpy(&s16, scale_at, 2);
          const float s = fp16_to_f32(s16);
          float lo = x[0], hi = x[0], amax = 0;
          for (int64_t i = 0; i < hd; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]), amax = std::max(amax, std::fabs(x[i]));
          const float range = t == KvDtype::int8 ? amax / 127 : (hi - lo) / 15;
          EXPECT_LE(s, range * (1 + 1.f / 512) + 6e-8f);
          return s * 0.5f * (1 + 1e-5f);
        };
        for (int64_t h = 0; h < nkv; ++h) {
          std::vector<float> kd(size_t(hd * bs)), vd(size_t(bs * hd));
          kv_dequant_k_tile(g, hd, 0, h, bs, kd.data());
          kv_dequant_v_tile(g, hd, 0, h, bs, vd.data());
          for (int64_t j = 0; j < bs; ++j)
            for (int64_t d = 0; d < hd; ++d) {
              const float* kx = K[j].data() + h * hd;
              const float* vx = V[j].data() + h * hd;
              const uint8_t* ks = kb.data() + g.k_scales_offset + (h * bs + j) * g.k_scale_bytes;
              const uint8_t* vs = vb.data() + g.v_scales_offset + (j * nkv + h) * g.v_scale_bytes;
              ASSERT_LE(std::fabs(kd[d * bs + j] - kx[d]), bound(ks, kx, kx[d])) << "K slot " << j << " dim " << d;
              ASSERT_LE(std::fabs(vd[j * hd + d] - vx[d]), bound(vs, vx, vx[d])) << "V slot " << j << " dim " << d;
            }
        }
      }
}

// Tokens of one block are written in parallel (prefill): 16 threads writing the 16 slots of one block at
// once leave exactly the bytes of writing them one after another, in every type (int4's nibbles of one
// byte belong to one slot).
TEST(KvQuant, ConcurrentSlotWritesDoNotDisturbEachOther) {
  const int64_t nkv = 3, hd = 33, bs = 16;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<std::vector<float>> K(bs, std::vector<float>(nkv * hd)), V = K;
  for (auto& row : K)
    for (auto& x : row) x = nd(rng);
  for (auto& row : V)
    for (auto& x : row) x = nd(rng);
  for (KvDtype t : kAll) {
    SCOPED_TRACE(kv_dtype_name(t));
    const KvLayerView g = kv_layer_geometry(t, t, nkv, hd, bs);
    std::vector<uint8_t> ks(size_t(g.k_block_bytes)), vs(size_t(g.v_block_bytes));
    for (int64_t j = 0; j < bs; ++j) kv_write_token(g, nkv, hd, ks.data(), vs.data(), j, K[j].data(), V[j].data());
    for (int round = 0; round < 20; ++round) {
      std::vector<uint8_t> kp(ks.size()), vp(vs.size());
      std::vector<std::thread> threads;
      for (int64_t j = 0; j < bs; ++j)
        threads.emplace_back([&, j] {
          for (int rep = 0; rep < 50; ++rep) kv_write_token(g, nkv, hd, kp.data(), vp.data(), j, K[j].data(), V[j].data());
        });
      for (auto& th : threads) th.join();
      ASSERT_EQ(kp, ks) << "round " << round;
      ASSERT_EQ(vp, vs) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace tinfer

// Internal: what Q4_0/Q5_0 and Q4_1/Q5_1 share. All four are blocks of 32 codes of kBits (4 or 5) bits,
// the low 4 bits in qs (nibble order of code_layout.h) and, for 5 bits, the fifth in qh. Sym<kBits, B> is
// the _0 format (x = d * (q - 2^(kBits-1))), Affine<kBits, B> the _1 format (x = d * q + m). The
// reference pairs are bit-exact with ggml's quantize_row_q{4,5}_{0,1}_ref / dequantize_row_q{4,5}_{0,1}
// (compiled with -ffp-contract=off); the family files (q4_0_1.cpp, q5_0_1.cpp) instantiate them.
#pragma once
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/code_layout.h"
#include "quant/weighted_search.h"

namespace tinfer::quant_ref::q45 {

// The code packing and the per-block primitives common to both formats of a width.
template <int kBits, class B>
struct Codes {
  static_assert(kBits == 4 || kBits == 5);
  static constexpr int kNmax = (1 << kBits) - 1;  // largest code: 15 or 31

  static void unpack(const B& b, uint8_t* L) {
    unpack_nibbles32(b.qs, L);
    if constexpr (kBits == 5) add_fifth_bits32(b.qh, L);
  }
  static void pack(const uint8_t* L, B& b) {
    pack_nibbles32(L, b.qs);
    if constexpr (kBits == 5) pack_fifth_bits32(L, b.qh);
  }
  static void codes(const B& b, int32_t* q) {
    uint8_t L[kQK];
    unpack(b, L);
    std::copy(L, L + kQK, q);
  }
  static void put_codes(B& b, const int32_t* q) {
    uint8_t L[kQK];
    std::copy(q, q + kQK, L);
    pack(L, b);
  }
  // The dequantization loop of both formats: each block of n values unpacked, then block(b, L, y) writes its kQK
  // values y from the codes L (the format's float expression, in ggml's order).
  template <class Block>
  static void decode(const void* src, float* dst, int64_t n, Block block) {
    const auto* b = static_cast<const B*>(src);
    uint8_t L[kQK];
    for (int64_t i = 0; i < n / kQK; ++i) {
      unpack(b[i], L);
      block(b[i], L, dst + i * kQK);
    }
  }
};

// Q4_0 / Q5_0: x = d * (q - kZero), kZero = 8 or 16.
template <int kBits, class B>
struct Sym : Codes<kBits, B> {
  using C = Codes<kBits, B>;
  static constexpr int kZero = 1 << (kBits - 1);
  static constexpr float kZeroHalf = kZero + 0.5f;  // 8.5f or 16.5f, exactly

  static void grid_block(const B& b, float* scale, float* offset) {
    const float d = fp16_to_f32(b.d);
    std::fill(scale, scale + kQK, d);
    std::fill(offset, offset + kQK, -kZero * d);
  }
  // Weighted: symmetric scale fit on codes -kZero..kZero-1 (either end may take the largest value), then
  // the codes re-rounded to the stored fp16 d.
  static void search(const float* x, const float* w, B& b) {
    int32_t L[kQK];
    b.d = f32_to_fp16(weighted_scale_fit(kQK, -kZero, kZero - 1, x, w, L));
    round_to_grid(kQK, -kZero, kZero - 1, x, fp16_to_f32(b.d), 0.0f, L);
    for (int32_t& l : L) l += kZero;
    C::put_codes(b, L);
  }

  static void to_float(const void* src, float* dst, int64_t n) {
    C::decode(src, dst, n, [](const B& b, const uint8_t* L, float* y) {
      const float d = fp16_to_f32(b.d);
      for (int j = 0; j < kQK; ++j) y[j] = (L[j] - kZero) * d;
    });
  }
  // d = max / -kZero where max is the signed value of largest magnitude, so that value maps to q = 0
  // (the asymmetric end of [-kZero, kZero-1]) and the full range is used.
  static void from_float(const float* src, void* dst, int64_t n) {
    auto* b = static_cast<B*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i) {
      const float* x = src + i * kQK;
      float amax = 0.0f, max = 0.0f;
      for (int j = 0; j < kQK; ++j) {
        if (amax < std::fabs(x[j])) {
          amax = std::fabs(x[j]);
          max = x[j];
        }
      }
      const float d = max / -kZero;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      b[i].d = f32_to_fp16(d);
      // +kZero+0.5 then truncation = round half up around the zero point; the sum is >= 0.5 here.
      uint8_t L[kQK];
      for (int j = 0; j < kQK; ++j) L[j] = uint8_t(std::min<int>(C::kNmax, static_cast<int8_t>(x[j] * id + kZeroHalf)));
      C::pack(L, b[i]);
    }
  }
};

// Q4_1 / Q5_1: x = d * q + m.
template <int kBits, class B>
struct Affine : Codes<kBits, B> {
  using C = Codes<kBits, B>;

  static void grid_block(const B& b, float* scale, float* offset) {
    std::fill(scale, scale + kQK, fp16_to_f32(b.d));
    std::fill(offset, offset + kQK, fp16_to_f32(b.m));
  }
  // Weighted: affine fit with a free offset (m is any fp16), codes re-rounded to the stored d and m.
  static void search(const float* x, const float* w, B& b) {
    int32_t L[kQK];
    float m;
    b.d = f32_to_fp16(weighted_affine_fit(kQK, C::kNmax, x, w, L, &m, false));
    b.m = f32_to_fp16(m);
    round_to_grid(kQK, 0, C::kNmax, x, fp16_to_f32(b.d), fp16_to_f32(b.m), L);
    C::put_codes(b, L);
  }

  static void to_float(const void* src, float* dst, int64_t n) {
    C::decode(src, dst, n, [](const B& b, const uint8_t* L, float* y) {
      const float d = fp16_to_f32(b.d), m = fp16_to_f32(b.m);
      for (int j = 0; j < kQK; ++j) y[j] = L[j] * d + m;
    });
  }
  // d = (max - min) / kNmax, m = min; q = round_half_up((x - min) / d).
  static void from_float(const float* src, void* dst, int64_t n) {
    auto* b = static_cast<B*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i) {
      const float* x = src + i * kQK;
      float min = FLT_MAX, max = -FLT_MAX;
      for (int j = 0; j < kQK; ++j) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
      }
      const float d = (max - min) / C::kNmax;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      b[i].d = f32_to_fp16(d);
      b[i].m = f32_to_fp16(min);
      uint8_t L[kQK];
      for (int j = 0; j < kQK; ++j) {
        // As ggml: Q4_1 clamps the code to 15; Q5_1 does not (the top value lands on 31.5 at most and
        // the layout keeps 5 bits either way).
        if constexpr (kBits == 4)
          L[j] = uint8_t(std::min<int>(C::kNmax, static_cast<int8_t>((x[j] - min) * id + 0.5f)));
        else
          L[j] = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
      }
      C::pack(L, b[i]);
    }
  }
};

}  // namespace tinfer::quant_ref::q45

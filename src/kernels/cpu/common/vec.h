// Portable SIMD element-wise ops written with GCC vector extensions: each ISA directory includes
// this once, compiled with its own flags, so one source becomes SSE2, AVX2 or AVX-512 code.
// Everything has internal linkage (anonymous namespace) so the per-ISA copies never collide.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tinfer/act_quant.h"
#include "kernels/kernels.h"  // kExpChunk
#if defined(__AVX512F__) && TINFER_VEC_FLOATS == 16
#include <immintrin.h>
#endif

#ifndef TINFER_VEC_FLOATS
#error "define TINFER_VEC_FLOATS (4, 8 or 16) before including vec.h"
#endif

namespace tinfer {
namespace {

constexpr int kW = TINFER_VEC_FLOATS;
typedef float vf __attribute__((vector_size(kW * 4)));
typedef int32_t vi __attribute__((vector_size(kW * 4)));

inline vf vload(const float* p) { vf v; std::memcpy(&v, p, sizeof v); return v; }
inline void vstore(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
inline vf vsplat(float s) { return vf{} + s; }
inline float hsum(vf v) { float s = 0; for (int i = 0; i < kW; ++i) s += v[i]; return s; }
inline float hmax(vf v) { float s = v[0]; for (int i = 1; i < kW; ++i) s = v[i] > s ? v[i] : s; return s; }

// exp(x) to ~2 ulp (Cephes polynomial on x - n ln2, then scaled by 2^n); 0 below -87.3.
inline vf vexp(vf x) {
  const vf lo = vsplat(-87.33654f), hi = vsplat(88.72283f);
  vi under = x < lo;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  const float magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer (ties to even)
  vf n = (x * 1.44269504088896341f + magic) - magic;
  vf r = x - n * 0.693359375f + n * 2.12194440e-4f;
  vf p = vsplat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
#if defined(__AVX512F__) && TINFER_VEC_FLOATS == 16
  // p * 2^n in one vscalefps instead of building 2^n (convert, add, shift, multiply): bit-identical for
  // every float x < 88.37 (checked exhaustively); above, where n = 128, the built 2^n is inf while
  // vscalefps returns the finite exp up to FLT_MAX. Worth ~1-2% of the AVX-512 attention kernel, which
  // takes five 16-lane exps per KV block and group of 4 heads.
  vf out = (vf)_mm512_scalef_ps((__m512)p, (__m512)n);
#else
  vi e = (__builtin_convertvector(n, vi) + 127) << 23;
  vf scale;
  std::memcpy(&scale, &e, sizeof scale);
  vf out = p * scale;
#endif
  return under ? vsplat(0.0f) : out;
}

inline float v_dot_f32(const float* a, const float* b, int64_t n) {
  vf s0{}, s1{};
  int64_t i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    s0 += vload(a + i) * vload(b + i);
    s1 += vload(a + i + kW) * vload(b + i + kW);
  }
  for (; i + kW <= n; i += kW) s0 += vload(a + i) * vload(b + i);
  float s = hsum(s0 + s1);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

inline void v_axpy(float a, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) vstore(y + i, vload(y + i) + a * vload(x + i));
  for (; i < n; ++i) y[i] += a * x[i];
}

inline void v_scale_inplace(float* x, float s, int64_t n) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) vstore(x + i, vload(x + i) * s);
  for (; i < n; ++i) x[i] *= s;
}

inline void v_add_inplace(float* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) vstore(y + i, vload(y + i) + vload(x + i));
  for (; i < n; ++i) y[i] += x[i];
}

inline void v_rmsnorm(const float* x, const float* w, float* out, int64_t n, float eps) {
  const float ss = v_dot_f32(x, x, n);
  const float r = 1.0f / std::sqrt(ss / float(n) + eps);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) vstore(out + i, vload(x + i) * r * vload(w + i));
  for (; i < n; ++i) out[i] = x[i] * r * w[i];
}

inline void v_silu_mul(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    vf g = vload(gate + i);
    vstore(gate + i, g / (1.0f + vexp(-g)) * vload(up + i));
  }
  for (; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// GeGLU with the tanh GELU (Gemma): gelu(g) = g/2 (1 + tanh(u)), u = sqrt(2/pi) (g + 0.044715 g^3), which is
// g * sigmoid(2u): the same shape as SiLU with -2u in the exponent.
inline void v_gelu_mul(float* gate, const float* up, int64_t n) {
  constexpr float k2 = -2.0f * 0.7978845608028654f, c = 0.044715f;
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    vf g = vload(gate + i);
    vstore(gate + i, g / (1.0f + vexp(k2 * (g + c * g * g * g))) * vload(up + i));
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(k2 * (g + c * g * g * g))) * up[i];
  }
}

inline void v_softmax_inplace(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  int64_t i = 0;
  if (n >= kW) {
    vf m = vload(x);
    for (i = kW; i + kW <= n; i += kW) { vf v = vload(x + i); m = v > m ? v : m; }
    mx = hmax(m);
  }
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  vf s{};
  float st = 0;
  for (i = 0; i + kW <= n; i += kW) {
    vf e = vexp(vload(x + i) - mx);
    vstore(x + i, e);
    s += e;
  }
  for (; i < n; ++i) { x[i] = std::exp(x[i] - mx); st += x[i]; }
  v_scale_inplace(x, 1.0f / (hsum(s) + st), n);
}

// The sampler's tempered weights (contract in kernels.h): e[i] = exp((x[i] - best) * inv_t), 0 where x[i] is
// NaN or -inf, and sums[c] = the float sum of e over chunk c = [kExpChunk c, kExpChunk (c + 1)). e may be x.
inline void v_exp_weights(const float* x, int64_t n, float best, float inv_t, float* e, float* sums) {
  static_assert(kExpChunk % kW == 0);
  for (int64_t c0 = 0; c0 < n; c0 += kExpChunk) {
    const int64_t c1 = c0 + kExpChunk < n ? c0 + kExpChunk : n;
    vf s{};
    float st = 0;
    int64_t i = c0;
    for (; i + kW <= c1; i += kW) {
      const vf w = (vload(x + i) - best) * inv_t;
      const vf v = w == w ? vexp(w) : vsplat(0.0f);  // NaN: weight 0 (vexp(-inf) is 0 already)
      vstore(e + i, v);
      s += v;
    }
    for (; i < c1; ++i) {
      const float w = (x[i] - best) * inv_t;
      e[i] = w == w ? std::exp(w) : 0.0f;
      st += e[i];
    }
    sums[c0 / kExpChunk] = hsum(s) + st;
  }
}

// The first index of the largest value of x[0, n) (contract in kernels.h). Per 256-value block its max in
// vectors, the first block holding the overall max kept (a strict >: earlier blocks win ties), then a scalar
// search of that block alone. (A running index does not vectorize.)
inline int64_t v_argmax(const float* x, int64_t n) {
  constexpr int64_t kBlock = 256;
  const float kNegInf = -__builtin_inff();
  float best = kNegInf;
  int64_t at = -1;
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    const int64_t b1 = b0 + kBlock < n ? b0 + kBlock : n;
    vf m = vsplat(kNegInf);
    int64_t i = b0;
    for (; i + kW <= b1; i += kW) {
      const vf v = vload(x + i);
      m = v > m ? v : m;  // NaN never wins (the comparison is false)
    }
    float bm = hmax(m);
    for (; i < b1; ++i) bm = x[i] > bm ? x[i] : bm;
    if (bm > best) best = bm, at = b0;
  }
  if (at < 0) {  // nothing above -inf: the first value that is a number (-inf), else 0 (all NaN)
    for (int64_t i = 0; i < n; ++i)
      if (x[i] == x[i]) return i;
    return 0;
  }
  for (int64_t i = at;; ++i)
    if (x[i] == best) return i;
}

// One activation row to int8 per 32-block (the contract in kernel_table.h; bit-exact with the
// reference: d = amax / 127, q = nearbyint(x * (1 / d))), with the sums of each 16-element half.
inline void v_quantize_act_row(const float* x, int64_t cols, ActQuant mode, int8_t* q, float* d, int16_t* s16) {
  float row_amax = 0;
  if (mode == ActQuant::token)
    for (int64_t k = 0; k < cols; ++k) row_amax = std::max(row_amax, std::fabs(x[k]));
  for (int64_t b = 0; b < cols / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = row_amax;
    if (mode == ActQuant::block32)
      for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(xb[k]));
    const float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
    int32_t s[2] = {0, 0};
    for (int k = 0; k < 32; ++k) {
      const int v = int(std::nearbyint(xb[k] * id));
      q[b * 32 + k] = int8_t(v);
      s[k / 16] += v;
    }
    d[b] = db;
    s16[2 * b] = int16_t(s[0]);
    s16[2 * b + 1] = int16_t(s[1]);
  }
}

}  // namespace
}  // namespace tinfer

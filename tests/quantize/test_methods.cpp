// RTN, importance-weighted RTN and GPTQ on small random layers: GPTQ beats RTN on held-out inputs,
// GPTQ without cross-column terms is exactly importance-weighted RTN, the weighted scale search lowers the
// weighted error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/fp16.h"
#include "core/thread_pool.h"
#include "quant/blocks.h"
#include "quantize/grid_quant.h"
#include "quantize/methods.h"

namespace tinfer {
namespace {

// --- Code-grid shims for Q8_0 / Q4_0, used only while the type table has no grid for them (the types
// branch adds the real ones; then these are not used). ---
template <typename Blk, int kZero, int kMin, int kMax>
struct ShimGrid {
  static int32_t code(const Blk& b, int j) {
    if constexpr (sizeof(Blk) == sizeof(BlockQ8_0)) return reinterpret_cast<const BlockQ8_0&>(b).qs[j];
    const auto& q = reinterpret_cast<const BlockQ4_0&>(b);
    return j < 16 ? (q.qs[j] & 15) : (q.qs[j - 16] >> 4);
  }
  static void set(Blk& b, int j, int32_t v) {
    if constexpr (sizeof(Blk) == sizeof(BlockQ8_0)) {
      reinterpret_cast<BlockQ8_0&>(b).qs[j] = int8_t(v);
    } else {
      auto& q = reinterpret_cast<BlockQ4_0&>(b);
      if (j < 16) q.qs[j] = uint8_t((q.qs[j] & 0xF0) | v);
      else q.qs[j - 16] = uint8_t((q.qs[j - 16] & 0x0F) | (v << 4));
    }
  }
  static void grid(const void* src, float* s, float* o, int64_t n) {
    const Blk* b = static_cast<const Blk*>(src);
    for (int64_t i = 0; i < n; ++i) {
      const float d = fp16_to_f32(b[i / 32].d);
      s[i] = d, o[i] = -float(kZero) * d;
    }
  }
  static void get_codes(const void* src, int32_t* q, int64_t n) {
    const Blk* b = static_cast<const Blk*>(src);
    for (int64_t i = 0; i < n; ++i) q[i] = code(b[i / 32], int(i % 32));
  }
  static void set_codes(void* dst, const int32_t* q, int64_t n) {
    Blk* b = static_cast<Blk*>(dst);
    for (int64_t i = 0; i < n; ++i) set(b[i / 32], int(i % 32), q[i]);
  }
  // Weighted search over scales around amax / half-range.
  static void from_float_weighted(const float* x, void* dst, int64_t n, const float* imp) {
    Blk* b = static_cast<Blk*>(dst);
    for (int64_t k = 0; k < n / 32; ++k) {
      const float* xb = x + k * 32;
      float amax = 0, mx = 0;
      for (int j = 0; j < 32; ++j)
        if (std::fabs(xb[j]) > amax) amax = std::fabs(xb[j]), mx = xb[j];
      const float d0 = kZero == 8 ? mx / -8 : amax / 127;
      float best_d = d0;
      double best = INFINITY;
      for (int t = -8; t <= 8; ++t) {
        const float d = fp16_to_f32(f32_to_fp16(d0 * (1 + 0.03f * float(t))));
        double e = 0;
        for (int j = 0; j < 32; ++j) {
          const int32_t q = quantize_detail::snap_code(xb[j], d, -float(kZero) * d, kZero, kMin, kMax);
          const double r = xb[j] - (d * float(q - kZero));
          e += (imp ? imp[k * 32 + j] : 1.0f) * r * r;
        }
        if (e < best) best = e, best_d = d;
      }
      b[k].d = f32_to_fp16(best_d);
      for (int j = 0; j < 32; ++j) set(b[k], j, quantize_detail::snap_code(xb[j], best_d, -float(kZero) * best_d, kZero, kMin, kMax));
    }
  }
};

// The type's row, with the shim grid filled in where the table has none yet; nullptr when neither exists.
const TypeTraits* traits_with_grid(DType t) {
  static TypeTraits rows[2];
  const TypeTraits* found = find_type(t);
  if (!found) return nullptr;
  const TypeTraits& real = *found;
  if (real.grid) return &real;
  if (t == DType::Q8_0) {
    using G = ShimGrid<BlockQ8_0, 0, -128, 127>;
    rows[0] = real;
    rows[0].code_min = -128, rows[0].code_max = 127;
    rows[0].from_float_weighted = G::from_float_weighted, rows[0].grid = G::grid;
    rows[0].get_codes = G::get_codes, rows[0].set_codes = G::set_codes;
    return &rows[0];
  }
  if (t == DType::Q4_0) {
    using G = ShimGrid<BlockQ4_0, 8, 0, 15>;
    rows[1] = real;
    rows[1].code_min = 0, rows[1].code_max = 15;
    rows[1].from_float_weighted = G::from_float_weighted, rows[1].grid = G::grid;
    rows[1].get_codes = G::get_codes, rows[1].set_codes = G::set_codes;
    return &rows[1];
  }
  return nullptr;
}

std::vector<float> dequant(const TypeTraits& tt, const std::vector<uint8_t>& q, int64_t rows, int64_t cols) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  const size_t rb = size_t(cols / tt.block_size) * tt.block_bytes;
  for (int64_t r = 0; r < rows; ++r) tt.to_float(q.data() + rb * size_t(r), &out[r * cols], cols);
  return out;
}

// Correlated inputs with a few outlier channels: x = z A, A = mix of neighbours (AR-like) + scale per channel.
std::vector<float> correlated_inputs(int64_t n, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  std::vector<float> chan(static_cast<size_t>(cols));
  for (int64_t c = 0; c < cols; ++c) chan[c] = (c % 37 == 5) ? 8.f : 0.5f + float(c % 7) * 0.2f;
  std::vector<float> x(static_cast<size_t>(n * cols));
  for (int64_t i = 0; i < n; ++i) {
    const float common = nd(rng);
    float prev = nd(rng);
    for (int64_t c = 0; c < cols; ++c) {
      prev = 0.8f * prev + 0.6f * nd(rng);
      x[i * cols + c] = chan[c] * (prev + 0.5f * common);
    }
  }
  return x;
}

InputStats stats_of(const std::vector<float>& x, int64_t n, int64_t cols) {
  InputStats s;
  s.cols = cols, s.n_tokens = n;
  s.xtx.assign(size_t(cols * cols), 0.0), s.sum_abs.assign(size_t(cols), 0.0), s.sum_sq.assign(size_t(cols), 0.0);
  s.max_abs.assign(size_t(cols), 0.f);
  for (int64_t t = 0; t < n; ++t) {
    const float* r = &x[t * cols];
    for (int64_t i = 0; i < cols; ++i) {
      s.sum_abs[i] += std::fabs(r[i]), s.sum_sq[i] += double(r[i]) * r[i];
      s.max_abs[i] = std::max(s.max_abs[i], std::fabs(r[i]));
      for (int64_t j = 0; j < cols; ++j) s.xtx[i * cols + j] += double(r[i]) * r[j];
    }
  }
  return s;
}

// || (W - Wq) X^T ||^2 / || W X^T ||^2 over the rows of x.
double output_error(const std::vector<float>& w, const std::vector<float>& wq, int64_t rows, int64_t cols,
                    const std::vector<float>& x, int64_t n) {
  double num = 0, den = 0;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double y = 0, e = 0;
      for (int64_t c = 0; c < cols; ++c) {
        y += double(w[r * cols + c]) * x[t * cols + c];
        e += double(w[r * cols + c] - wq[r * cols + c]) * x[t * cols + c];
      }
      num += e * e, den += y * y;
    }
  return num / den;
}

struct Layer {
  int64_t rows = 64, cols = 512, n_cal = 2048, n_test = 512;
  std::vector<float> w, x_cal, x_test;
  InputStats stats;
  Layer() {
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    w.resize(size_t(rows * cols));
    for (float& v : w) v = nd(rng) * 0.05f;
    x_cal = correlated_inputs(n_cal, cols, rng);
    x_test = correlated_inputs(n_test, cols, rng);
    stats = stats_of(x_cal, n_cal, cols);
  }
};

const Layer& layer() {
  static Layer l;
  return l;
}

class GptqTypes : public ::testing::TestWithParam<DType> {};

TEST_P(GptqTypes, BeatsRtnOnHeldOutInputs) {
  const TypeTraits* tt = traits_with_grid(GetParam());
  if (!tt) GTEST_SKIP() << "type " << uint32_t(GetParam()) << " has no code grid yet";
  const Layer& L = layer();
  ThreadPool pool(2);
  const std::vector<float> imp = activation_importance(L.stats);
  const double e_rtn = output_error(L.w, dequant(*tt, quantize_detail::rtn(*tt, L.w.data(), L.rows, L.cols, nullptr, pool), L.rows, L.cols), L.rows, L.cols, L.x_test, L.n_test);
  const double e_iw = output_error(L.w, dequant(*tt, quantize_detail::rtn(*tt, L.w.data(), L.rows, L.cols, imp.data(), pool), L.rows, L.cols), L.rows, L.cols, L.x_test, L.n_test);
  GptqOptions o;
  const double e_gptq = output_error(L.w, dequant(*tt, quantize_detail::gptq(*tt, L.w.data(), L.rows, L.cols, L.stats, o, pool), L.rows, L.cols), L.rows, L.cols, L.x_test, L.n_test);
  o.act_order = true;
  const double e_act = output_error(L.w, dequant(*tt, quantize_detail::gptq(*tt, L.w.data(), L.rows, L.cols, L.stats, o, pool), L.rows, L.cols), L.rows, L.cols, L.x_test, L.n_test);
  o.act_order = false, o.block = 32;
  const double e_b32 = output_error(L.w, dequant(*tt, quantize_detail::gptq(*tt, L.w.data(), L.rows, L.cols, L.stats, o, pool), L.rows, L.cols), L.rows, L.cols, L.x_test, L.n_test);
  std::printf("%s held-out relative output error: rtn %.3e  iw-rtn %.3e  gptq %.3e  gptq act-order %.3e  gptq block 32 %.3e\n",
              tt->name, e_rtn, e_iw, e_gptq, e_act, e_b32);
  EXPECT_LT(e_gptq, 0.8 * e_rtn);
  EXPECT_LT(e_gptq, e_iw);
  EXPECT_LT(e_act, 0.8 * e_rtn);
  EXPECT_NEAR(e_b32, e_gptq, 0.05 * e_gptq);  // lazy batching changes only float rounding
}

TEST_P(GptqTypes, DiagonalHessianIsWeightedRtn) {
  const TypeTraits* tt = traits_with_grid(GetParam());
  if (!tt) GTEST_SKIP() << "type " << uint32_t(GetParam()) << " has no code grid yet";
  const Layer& L = layer();
  InputStats d = L.stats;  // keep the diagonal only: no column predicts another
  for (int64_t i = 0; i < L.cols; ++i)
    for (int64_t j = 0; j < L.cols; ++j)
      if (i != j) d.xtx[i * L.cols + j] = 0;
  ThreadPool pool(2);
  const std::vector<float> imp = activation_importance(d);
  const std::vector<uint8_t> rtn = quantize_detail::rtn(*tt, L.w.data(), L.rows, L.cols, imp.data(), pool);
  for (bool act : {false, true}) {
    GptqOptions o;
    o.act_order = act;
    EXPECT_EQ(quantize_detail::gptq(*tt, L.w.data(), L.rows, L.cols, d, o, pool), rtn) << "act_order " << act;
  }
}

TEST_P(GptqTypes, WeightedRtnLowersWeightedError) {
  const TypeTraits* tt = traits_with_grid(GetParam());
  if (!tt) GTEST_SKIP() << "type " << uint32_t(GetParam()) << " has no code grid yet";
  const Layer& L = layer();
  std::mt19937 rng(3);
  std::lognormal_distribution<float> ln(0.f, 1.5f);
  std::vector<float> imp(size_t(L.cols));
  for (float& v : imp) v = ln(rng);
  ThreadPool pool(2);
  auto werr = [&](const std::vector<uint8_t>& q) {
    const std::vector<float> wq = dequant(*tt, q, L.rows, L.cols);
    double e = 0;
    for (int64_t r = 0; r < L.rows; ++r)
      for (int64_t c = 0; c < L.cols; ++c) e += imp[c] * double(L.w[r * L.cols + c] - wq[r * L.cols + c]) * (L.w[r * L.cols + c] - wq[r * L.cols + c]);
    return e;
  };
  const double plain = werr(quantize_detail::rtn(*tt, L.w.data(), L.rows, L.cols, nullptr, pool));
  const double weighted = werr(quantize_detail::rtn(*tt, L.w.data(), L.rows, L.cols, imp.data(), pool));
  std::printf("%s importance-weighted error: plain rtn %.4e, weighted rtn %.4e\n", tt->name, plain, weighted);
  EXPECT_LT(weighted, plain);
}

INSTANTIATE_TEST_SUITE_P(Types, GptqTypes,
                         ::testing::Values(DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q4_K, DType::Q6_K,
                                           DType::Q5_0, DType::Q5_1, DType::Q5_K, DType::Q3_K, DType::Q2_K),
                         [](const auto& info) {
                           const TypeTraits* t = find_type(info.param);
                           return std::string(t ? t->name : "id" + std::to_string(uint32_t(info.param)));
                         });

TEST(Gptq, FloatTargetsConvert) {
  const Layer& L = layer();
  GptqOptions o;
  o.threads = 2;
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    EXPECT_EQ(quantize_gptq(t, L.w.data(), L.rows, L.cols, L.stats, o), quantize_rtn(t, L.w.data(), L.rows, L.cols, nullptr, 2));
}

TEST(Gptq, RejectsMismatchedStats) {
  const Layer& L = layer();
  EXPECT_THROW(quantize_gptq(DType::Q8_0, L.w.data(), L.rows * 2, L.cols / 2, L.stats, GptqOptions{}), std::exception);
}

}  // namespace
}  // namespace tinfer

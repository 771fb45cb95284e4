// RTN, importance-weighted RTN and GPTQ on small random layers: GPTQ beats RTN on held-out inputs,
// GPTQ without cross-column terms is exactly importance-weighted RTN, the weighted scale search lowers the
// weighted error.
#include <gtest/gtest.h>

#include <cmath>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <random>

#include "common/test_env.h"
#include "model/model.h"
#include "core/thread_pool.h"
#include "quantize/grid_quant.h"
#include "quantize/methods.h"

namespace tinfer {
namespace {

// The type's row when it has a code grid, else nullptr.
const TypeTraits* traits_with_grid(DType t) {
  const TypeTraits* row = find_type(t);
  return row && row->grid ? row : nullptr;
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

// The pipeline on the default model, timed: TINFER_QUANTIZE_BENCH=<calibration tokens> [TINFER_BENCH_TYPE=q4_0].
TEST(Pipeline, SmolLM2Timing) {
  const char* env = std::getenv("TINFER_QUANTIZE_BENCH");
  if (!env) GTEST_SKIP() << "set TINFER_QUANTIZE_BENCH=<tokens> to time the pipeline on the default model";
  const std::string model_path = test::default_model(), text = test::shared_file("corpus/wikitext-2-test.raw");
  TINFER_REQUIRE_FILE(model_path, "default model");
  TINFER_REQUIRE_FILE(text, "wikitext-2-test.raw");
  const char* tn = std::getenv("TINFER_BENCH_TYPE");
  const TypeTraits* found = find_type(std::string(tn ? tn : "q4_0"));
  ASSERT_NE(found, nullptr);
  const TypeTraits* tt = traits_with_grid(found->type);
  ASSERT_NE(tt, nullptr) << "no grid for " << found->name;
  auto model = Model::load(model_path);
  std::ifstream f(text, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::vector<int32_t> tokens = model->tokenizer().encode(ss.str().substr(600000, 400000), false);
  using clk = std::chrono::steady_clock;
  auto secs = [](clk::time_point a) { return std::chrono::duration<double>(clk::now() - a).count(); };
  auto t0 = clk::now();
  CalibOptions co;
  co.max_tokens = std::atoll(env);
  CalibStats stats = collect_calib_stats(*model, tokens, co);
  std::printf("calibration: %lld tokens %.1f s\n", (long long)stats.begin()->second->n_tokens, secs(t0));
  t0 = clk::now();
  FloatModel fm = load_float_model(*model);
  std::printf("load_float_model %.1f s\n", secs(t0));
  t0 = clk::now();
  ScaleSearchOptions so;
  so.max_sample_rows = 256;
  const auto rep = awq_apply(fm, stats, found->type, so);
  double plain = 0, scaled = 0;
  for (const auto& r : rep) plain += r.err_plain, scaled += r.err_scaled;
  std::printf("awq (%s, 256 rows): %.1f s, summed relative error %.4f -> %.4f\n", found->name, secs(t0), plain, scaled);
  ThreadPool pool(0);
  double t_rtn = 0, t_gptq = 0, e_rtn = 0, e_gptq = 0;
  for (int64_t l = 0; l < fm.config.n_layers; ++l)
    for (const char* what : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
      const std::string name = layer_tensor(l, what);
      const FloatTensor& w = fm.tensors.at(name);
      const InputStats& x = *stats.at(name);
      auto a = clk::now();
      const auto q_rtn = quantize_detail::rtn(*tt, w.data.data(), w.rows(), w.cols(), nullptr, pool);
      t_rtn += secs(a);
      a = clk::now();
      const auto q_gptq = quantize_detail::gptq(*tt, w.data.data(), w.rows(), w.cols(), x, GptqOptions{}, pool);
      t_gptq += secs(a);
      e_rtn += output_error(w.data, dequant(*tt, q_rtn, w.rows(), w.cols()), w.rows(), w.cols(), x.sample, 64);
      e_gptq += output_error(w.data, dequant(*tt, q_gptq, w.rows(), w.cols()), w.rows(), w.cols(), x.sample, 64);
    }
  std::printf("rtn %.1f s, gptq %.1f s; summed relative output error on 64 sample rows: rtn %.4f gptq %.4f\n", t_rtn,
              t_gptq, e_rtn, e_gptq);
}

}  // namespace
}  // namespace tinfer

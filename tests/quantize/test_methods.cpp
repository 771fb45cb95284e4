// RTN, importance-weighted RTN and GPTQ on small random layers: GPTQ beats RTN on held-out inputs,
// GPTQ without cross-column terms is exactly importance-weighted RTN, the weighted scale search lowers the
// weighted error.
#include <gtest/gtest.h>

#include <cmath>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <random>

#include "common/test_env.h"
#include "backend/cpu/cpu_forward.h"
#include "formats/gguf.h"
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

// The clip search's summed block output error (grid_quant.h block_output_error under the calibration X^T X)
// of a quantized matrix.
double block_error_of(const TypeTraits& tt, const std::vector<float>& w, const std::vector<uint8_t>& q, int64_t rows,
                      int64_t cols, const InputStats& x) {
  const std::vector<float> wq = dequant(tt, q, rows, cols);
  std::vector<float> e(static_cast<size_t>(cols));
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) e[c] = w[r * cols + c] - wq[r * cols + c];
    for (int64_t c0 = 0; c0 < cols; c0 += tt.block_size)
      total += quantize_detail::block_output_error(&e[c0], tt.block_size, &x.xtx[c0 * cols + c0], cols);
  }
  return total;
}

// Heavy-tailed weights (a few large ones per row), where clipping a block's range pays.
std::vector<float> heavy_tailed_weights(int64_t rows, int64_t cols) {
  std::mt19937 rng(11);
  std::student_t_distribution<float> td(2.5f);
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (float& v : w) v = 0.03f * td(rng);
  return w;
}

TEST_P(GptqTypes, ClipSearchNeverRaisesBlockError) {
  const TypeTraits* tt = traits_with_grid(GetParam());
  if (!tt) GTEST_SKIP() << "type " << uint32_t(GetParam()) << " has no code grid yet";
  const Layer& L = layer();
  const std::vector<float> w = heavy_tailed_weights(L.rows, L.cols);
  const std::vector<float> imp = activation_importance(L.stats);
  ThreadPool pool(2);
  for (const float* importance : {static_cast<const float*>(nullptr), imp.data()}) {
    SCOPED_TRACE(importance ? "weighted" : "plain");
    ClipOptions off;
    off.n_grid = 1, off.threads = 2;
    ClipReport rep_off, rep;
    const std::vector<uint8_t> q_off = quantize_rtn_clipped(tt->type, w.data(), L.rows, L.cols, L.stats, importance, off, &rep_off);
    const std::vector<uint8_t> q = quantize_rtn_clipped(tt->type, w.data(), L.rows, L.cols, L.stats, importance, ClipOptions{}, &rep);
    // Without the search: exactly importance-weighted RTN (its fit, then every code snapped).
    if (importance) {
      EXPECT_EQ(q_off, quantize_detail::rtn(*tt, w.data(), L.rows, L.cols, importance, pool));
    }
    EXPECT_EQ(rep_off.clipped, 0);
    EXPECT_EQ(rep.blocks, L.rows * L.cols / tt->block_size);
    const double e_off = block_error_of(*tt, w, q_off, L.rows, L.cols, L.stats);
    const double e = block_error_of(*tt, w, q, L.rows, L.cols, L.stats);
    std::printf("%s %s clip search: %lld of %lld blocks clipped, block output error %.4e -> %.4e\n", tt->name,
                importance ? "weighted" : "plain", (long long)rep.clipped, (long long)rep.blocks, e_off, e);
    EXPECT_NEAR(rep.err_plain, e_off, 1e-3 * e_off);  // the report describes the bytes
    EXPECT_NEAR(rep.err_clipped, e, 1e-3 * e);
    EXPECT_LE(e, e_off);
  }
}

// On heavy-tailed weights the clip search lowers the held-out output error of RTN and of GPTQ at 4 bits.
TEST(Clip, LowersHeldOutErrorAt4Bits) {
  const Layer& L = layer();
  const std::vector<float> w = heavy_tailed_weights(L.rows, L.cols);
  const std::vector<float> imp = activation_importance(L.stats);
  ThreadPool pool(2);
  for (DType t : {DType::Q4_0, DType::Q4_K}) {
    const TypeTraits& tt = type_traits(t);
    auto err = [&](const std::vector<uint8_t>& q) {
      return output_error(w, dequant(tt, q, L.rows, L.cols), L.rows, L.cols, L.x_test, L.n_test);
    };
    const double e_rtn = err(quantize_detail::rtn(tt, w.data(), L.rows, L.cols, imp.data(), pool));
    const double e_rtn_clip = err(quantize_rtn_clipped(t, w.data(), L.rows, L.cols, L.stats, imp.data(), ClipOptions{}));
    GptqOptions o;
    const double e_gptq = err(quantize_detail::gptq(tt, w.data(), L.rows, L.cols, L.stats, o, pool));
    o.clip = ClipOptions{};
    const double e_gptq_clip = err(quantize_detail::gptq(tt, w.data(), L.rows, L.cols, L.stats, o, pool));
    o.clip_compensated = false;  // the uncompensated block error: not GPTQ's loss
    const double e_gptq_clip_h = err(quantize_detail::gptq(tt, w.data(), L.rows, L.cols, L.stats, o, pool));
    std::printf("%s held-out output error: iw-rtn %.4e, +clip %.4e; gptq %.4e, +clip %.4e (+clip on X^T X blocks "
                "%.4e)\n", tt.name, e_rtn, e_rtn_clip, e_gptq, e_gptq_clip, e_gptq_clip_h);
    EXPECT_LT(e_rtn_clip, 0.95 * e_rtn);
    // Inside GPTQ the later columns already absorb most of a block's error: on this layer the search is a
    // wash (q4_0 +2%, q4_k +5%); it must not do real harm. (Measured on models: BENCHMARKS §2b.)
    EXPECT_LT(e_gptq_clip, 1.1 * e_gptq);
  }
}

// With independent columns (diagonal Hessian, no damping) GPTQ's clip search is the RTN clip search: the
// compensated error is the block output error and nothing is carried between columns.
TEST_P(GptqTypes, ClipWithDiagonalHessianIsRtnClip) {
  const TypeTraits* tt = traits_with_grid(GetParam());
  if (!tt) GTEST_SKIP() << "type " << uint32_t(GetParam()) << " has no code grid yet";
  const Layer& L = layer();
  InputStats d = L.stats;
  for (int64_t i = 0; i < L.cols; ++i)
    for (int64_t j = 0; j < L.cols; ++j)
      if (i != j) d.xtx[i * L.cols + j] = 0;
  const std::vector<float> w = heavy_tailed_weights(L.rows, L.cols);
  const std::vector<float> imp = activation_importance(d);
  ThreadPool pool(2);
  const std::vector<uint8_t> rtn_clip = quantize_rtn_clipped(tt->type, w.data(), L.rows, L.cols, d, imp.data(), ClipOptions{});
  GptqOptions o;
  o.damp = 0, o.clip = ClipOptions{};
  for (bool compensated : {true, false}) {
    o.clip_compensated = compensated;
    const std::vector<uint8_t> g = quantize_detail::gptq(*tt, w.data(), L.rows, L.cols, d, o, pool);
    // Equal bytes up to near-ties between clip ratios (the two errors round differently): compare the errors.
    const double eg = block_error_of(*tt, w, g, L.rows, L.cols, d), er = block_error_of(*tt, w, rtn_clip, L.rows, L.cols, d);
    EXPECT_NEAR(eg, er, 1e-5 * er) << "compensated " << compensated;
    size_t same = 0;
    for (size_t i = 0; i < g.size(); ++i) same += g[i] == rtn_clip[i];
    EXPECT_GE(double(same), 0.999 * double(g.size())) << "compensated " << compensated;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GptqTypes,
                         ::testing::Values(DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q4_K, DType::Q6_K,
                                           DType::Q5_0, DType::Q5_1, DType::Q5_K, DType::Q3_K, DType::Q2_K),
                         [](const auto& info) {
                           const TypeTraits* t = find_type(info.param);
                           return std::string(t ? t->name : "id" + std::to_string(uint32_t(info.param)));
                         });

// Inputs never seen (diag(H) == 0) and a rank-deficient Hessian (fewer tokens than columns): GPTQ still runs,
// zeroes the dead columns and beats RTN on the live ones.
TEST(Gptq, DeadColumnsAndFewTokens) {
  const Layer& L = layer();
  const int64_t n = 96;
  std::vector<float> x(L.x_cal.begin(), L.x_cal.begin() + n * L.cols);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < L.cols; c += 50) x[t * L.cols + c] = 0;  // dead inputs
  const InputStats s = stats_of(x, n, L.cols);
  std::vector<float> x_test(L.x_test);
  for (int64_t t = 0; t < L.n_test; ++t)
    for (int64_t c = 0; c < L.cols; c += 50) x_test[t * L.cols + c] = 0;
  const TypeTraits& tt = type_traits(DType::Q4_0);
  ThreadPool pool(2);
  for (bool act : {false, true}) {
    GptqOptions o;
    o.act_order = act;
    const std::vector<float> wq = dequant(tt, quantize_detail::gptq(tt, L.w.data(), L.rows, L.cols, s, o, pool), L.rows, L.cols);
    for (int64_t r = 0; r < L.rows; ++r)
      for (int64_t c = 0; c < L.cols; c += 50) ASSERT_EQ(wq[r * L.cols + c], 0.f) << r << " " << c;
    const double e_rtn = output_error(L.w, dequant(tt, quantize_detail::rtn(tt, L.w.data(), L.rows, L.cols, nullptr, pool), L.rows, L.cols), L.rows, L.cols, x_test, L.n_test);
    const double e_gptq = output_error(L.w, wq, L.rows, L.cols, x_test, L.n_test);
    std::printf("96 tokens, act_order %d: rtn %.3e gptq %.3e\n", int(act), e_rtn, e_gptq);
    EXPECT_LT(e_gptq, e_rtn);
  }
}

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
  int n_done = 0;
  for (int64_t l = 0; l < fm.config.n_layers; ++l)
    for (const char* what : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
      const std::string name = layer_tensor(l, what);
      const FloatTensor& w = fm.tensors.at(name);
      const InputStats& x = *stats.at(name);
      if (w.cols() % tt->block_size != 0) continue;  // (the tool falls back to another type there)
      ++n_done;
      auto a = clk::now();
      const auto q_rtn = quantize_detail::rtn(*tt, w.data.data(), w.rows(), w.cols(), nullptr, pool);
      t_rtn += secs(a);
      a = clk::now();
      const auto q_gptq = quantize_detail::gptq(*tt, w.data.data(), w.rows(), w.cols(), x, GptqOptions{}, pool);
      t_gptq += secs(a);
      e_rtn += output_error(w.data, dequant(*tt, q_rtn, w.rows(), w.cols()), w.rows(), w.cols(), x.sample, 64);
      e_gptq += output_error(w.data, dequant(*tt, q_gptq, w.rows(), w.cols()), w.rows(), w.cols(), x.sample, 64);
    }
  std::printf("%d tensors: rtn %.1f s, gptq %.1f s; summed relative output error on 64 sample rows: rtn %.4f gptq %.4f\n",
              n_done, t_rtn, t_gptq, e_rtn, e_gptq);
}

// Perplexity of the default model with its layer matrices quantized by each method (others F32), on a
// wikitext slice disjoint from the calibration slice: TINFER_QUANTIZE_PPL=<calibration tokens>
// [TINFER_BENCH_TYPE=q4_0].
double g_early_ppl = 0;  // perplexity over the first 16 positions of each window (set by perplexity())

double perplexity(const std::vector<uint8_t>& image, const std::vector<int32_t>& toks, int64_t ctx) {
  double nll_early = 0;
  int64_t n_early = 0;
  auto m = Model::from_gguf_bytes(image);
  ThreadPool pool(0);
  CpuForward fwd(*m, pool, ctx);
  auto kv = fwd.allocate_kv(ctx / 16 + 1, 16, KvDtype::f32);
  const int64_t V = m->config().n_vocab;
  double nll = 0;
  int64_t count = 0;
  for (size_t w0 = 0; w0 + 1 < toks.size(); w0 += size_t(ctx)) {
    const int64_t n = std::min<int64_t>(ctx, int64_t(toks.size() - w0));
    ForwardBatch b;
    b.tokens.assign(toks.begin() + w0, toks.begin() + w0 + n);
    for (int64_t i = 0; i < n; ++i) b.positions.push_back(int32_t(i)), b.seq.push_back(0), b.logit_rows.push_back(int32_t(i));
    b.block_tables.emplace_back();
    for (int64_t k = 0; k <= n / 16; ++k) b.block_tables[0].push_back(int32_t(k));
    std::vector<float> logits(size_t(n * V));
    fwd.forward(b, *kv, logits.data());
    for (int64_t i = 0; i + 1 < n; ++i) {
      const float* l = &logits[i * V];
      const float mx = *std::max_element(l, l + V);
      double z = 0;
      for (int64_t v = 0; v < V; ++v) z += std::exp(double(l[v] - mx));
      const double e = std::log(z) + mx - l[b.tokens[i + 1]];
      nll += e;
      ++count;
      if (i < 16) nll_early += e, ++n_early;
    }
  }
  g_early_ppl = std::exp(nll_early / double(n_early));
  return std::exp((nll - nll_early) / double(count - n_early));
}

TEST(Pipeline, SmolLM2Perplexity) {
  const char* env = std::getenv("TINFER_QUANTIZE_PPL");
  if (!env) GTEST_SKIP() << "set TINFER_QUANTIZE_PPL=<calibration tokens> to compare methods by perplexity";
  const std::string model_path = test::default_model(), text = test::shared_file("corpus/wikitext-2-test.raw");
  TINFER_REQUIRE_FILE(model_path, "default model");
  TINFER_REQUIRE_FILE(text, "wikitext-2-test.raw");
  const char* tn = std::getenv("TINFER_BENCH_TYPE");
  const TypeTraits* tt = find_type(std::string(tn ? tn : "q4_0"));
  ASSERT_NE(tt, nullptr);
  auto model = Model::load(model_path);
  std::ifstream f(text, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string all = ss.str();
  const std::vector<int32_t> calib = model->tokenizer().encode(all.substr(600000, 400000), false);
  std::vector<int32_t> eval = model->tokenizer().encode(all.substr(0, 20000), false);
  eval.resize(std::min<size_t>(eval.size(), 2048));
  CalibOptions co;
  co.max_tokens = std::atoll(env);
  if (std::getenv("TINFER_BENCH_CTX")) co.ctx = std::atoll(std::getenv("TINFER_BENCH_CTX"));
  if (std::getenv("TINFER_BENCH_SINK")) co.first_token_weight = std::atof(std::getenv("TINFER_BENCH_SINK"));
  using clk = std::chrono::steady_clock;
  auto secs = [](clk::time_point a) { return std::chrono::duration<double>(clk::now() - a).count(); };

  auto image = [&](const FloatModel& fm, const std::function<std::vector<uint8_t>(const std::string&, const FloatTensor&)>& q) {
    GgufWriter w;
    copy_metadata(model->gguf(), w);
    for (const GgufTensor& t : model->gguf().tensors()) {
      const FloatTensor& ft = fm.tensors.at(t.name);
      const char* only = std::getenv("TINFER_BENCH_ONLY");  // quantize only tensors whose name contains it
      if (q && t.name.rfind("blk.", 0) == 0 && ft.shape.size() == 2 && ft.cols() % tt->block_size == 0 &&
          (!only || t.name.find(only) != std::string::npos)) {
        const std::vector<uint8_t> bytes = q(t.name, ft);
        w.add_tensor(t.name, tt->type, ft.shape, bytes.data(), bytes.size());
      } else {
        w.add_tensor(t.name, DType::F32, ft.shape, ft.data.data(), ft.data.size() * 4);
      }
    }
    return w.to_bytes();
  };
  auto t0 = clk::now();
  CalibStats stats = collect_calib_stats(*model, calib, co);
  std::printf("calibration %lld tokens: %.1f s\n", (long long)co.max_tokens, secs(t0));
  CalibOptions ho = co;  // held-out inputs: the evaluation text's own activations, for layer errors
  ho.max_tokens = 1024, ho.sample_rows = 256;
  const CalibStats held = collect_calib_stats(*model, eval, ho);
  const FloatModel base = load_float_model(*model);
  const char* me = std::getenv("TINFER_BENCH_METHODS");
  const std::string methods = me ? me : "rtn,iw,gptq,gptq-act,awq";
  auto want = [&](const char* m) { return ("," + methods + ",").find("," + std::string(m) + ",") != std::string::npos; };
  const double damp = std::getenv("TINFER_BENCH_DAMP") ? std::atof(std::getenv("TINFER_BENCH_DAMP")) : 0.01;
  std::printf("%s, %zu eval tokens, damp %.3f\n", tt->name, eval.size(), damp);
  const double ppl_float = perplexity(image(base, nullptr), eval, 512);
  std::printf("  float            ppl %.4f (first 16 positions %.3f)\n", ppl_float, g_early_ppl);
  auto report = [&](const char* name, const FloatModel& fm, const CalibStats& st, int method) {
    t0 = clk::now();
    double layer_err = 0;
    const auto bytes = image(fm, [&](const std::string& n, const FloatTensor& t) {
      const InputStats& x = *st.at(n);
      std::vector<uint8_t> q;
      if (method == 0) {
        q = quantize_rtn(tt->type, t.data.data(), t.rows(), t.cols(), nullptr);
      } else if (method == 1) {
        const std::vector<float> imp = activation_importance(x);
        q = quantize_rtn(tt->type, t.data.data(), t.rows(), t.cols(), imp.data());
      } else {
        GptqOptions o;
        o.act_order = method == 3, o.damp = damp;
        q = quantize_gptq(tt->type, t.data.data(), t.rows(), t.cols(), x, o);
      }
      if (&fm == &base) {  // held-out layer error (folded models would need folded held-out inputs)
        const InputStats& h = *held.at(n);
        const double e = output_error(t.data, dequant(*tt, q, t.rows(), t.cols()), t.rows(), t.cols(), h.sample,
                                      std::min<int64_t>(h.sample_rows, 64));
        layer_err += e;
        if (std::getenv("TINFER_BENCH_VERBOSE")) std::printf("    %-28s %.4e\n", n.c_str(), e);
      }
      return q;
    });
    const double q_s = secs(t0);
    const double ppl = perplexity(bytes, eval, 512);
    std::printf("  %-16s ppl %.4f (first 16 positions %.3f)  held-out layer error sum %.4f  (quantize %.1f s)\n", name, ppl,
                g_early_ppl, layer_err, q_s);
    std::fflush(stdout);
  };
  if (want("rtn")) report("rtn", base, stats, 0);
  if (want("iw")) report("iw-rtn", base, stats, 1);
  if (want("gptq")) report("gptq", base, stats, 2);
  if (want("gptq-act")) report("gptq act-order", base, stats, 3);
  if (!want("awq")) return;
  FloatModel awq = base;
  CalibStats awq_stats;  // a deep copy: the fold rescales the statistics
  std::map<const InputStats*, std::shared_ptr<InputStats>> copies;
  for (const auto& [n, p] : stats) {
    auto& c = copies[p.get()];
    if (!c) c = std::make_shared<InputStats>(*p);
    awq_stats[n] = c;
  }
  t0 = clk::now();
  awq_apply(awq, awq_stats, tt->type);
  std::printf("  awq search %.1f s\n", secs(t0));
  std::printf("  awq (float)      ppl %.4f\n", perplexity(image(awq, nullptr), eval, 512));
  report("awq + rtn", awq, awq_stats, 0);
  report("awq + iw-rtn", awq, awq_stats, 1);
  report("awq + gptq", awq, awq_stats, 2);
}

}  // namespace
}  // namespace tinfer

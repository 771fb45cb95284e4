// Calibration statistics on stories260K (and a timing run on SmolLM2-135M when asked for).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "common/test_env.h"
#include "backend/cpu/cpu_forward.h"
#include "model/model.h"
#include "quantize/calib_stats.h"
#include "quantize/float_model.h"
#include "quantize/simd.h"

namespace tinfer {
namespace {

std::string read_text(const std::string& path, size_t offset, size_t bytes) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  return s.substr(std::min(offset, s.size()), bytes);
}

TEST(CalibStats, Stories260K) {
  const std::string model_path = test::shared_file("models/stories260K.gguf");
  const std::string text_path = test::shared_file("corpus/tinystories-valid-head.txt");
  TINFER_REQUIRE_FILE(model_path, "stories260K.gguf");
  TINFER_REQUIRE_FILE(text_path, "tinystories-valid-head.txt");
  auto model = Model::load(model_path);
  const ModelConfig& c = model->config();
  std::vector<int32_t> tokens = model->tokenizer().encode(read_text(text_path, 700000, 6000), true);
  ASSERT_GT(tokens.size(), 300u);
  CalibOptions opts;
  opts.max_tokens = 300;
  opts.ctx = 128;
  opts.sample_rows = 40;
  opts.threads = 2;
  CalibStats stats = collect_calib_stats(*model, tokens, opts);

  ASSERT_EQ(stats.size(), size_t(7 * c.n_layers));
  EXPECT_EQ(stats.at("blk.0.attn_q.weight"), stats.at("blk.0.attn_v.weight"));
  EXPECT_EQ(stats.at("blk.1.ffn_gate.weight"), stats.at("blk.1.ffn_up.weight"));
  EXPECT_NE(stats.at("blk.1.ffn_gate.weight"), stats.at("blk.1.attn_q.weight"));
  EXPECT_EQ(stats.at("blk.0.ffn_down.weight")->cols, c.ffn_dim);
  EXPECT_EQ(stats.at("blk.0.attn_output.weight")->cols, c.q_dim());

  for (const auto& [name, s] : stats) {
    SCOPED_TRACE(name);
    const int64_t n = s->cols;
    EXPECT_EQ(s->n_tokens, 300);
    EXPECT_EQ(s->sample_rows, 40);
    ASSERT_EQ(s->sample.size(), size_t(40 * n));
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(s->xtx[i * n + i], s->sum_sq[i], 1e-4 * s->sum_sq[i] + 1e-9);
      for (int64_t j = 0; j < i; ++j) ASSERT_EQ(s->xtx[i * n + j], s->xtx[j * n + i]);
    }
    // PSD: v^T X^T X v >= 0 for a few vectors, and Cauchy-Schwarz on every entry.
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        ASSERT_LE(s->xtx[i * n + j] * s->xtx[i * n + j], s->xtx[i * n + i] * s->xtx[j * n + j] * (1 + 1e-5) + 1e-12);
    for (int v = 0; v < 3; ++v) {
      std::vector<double> x(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) x[i] = std::sin(double(i * (v + 1)) + v);
      double q = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) q += x[i] * s->xtx[i * n + j] * x[j];
      EXPECT_GE(q, -1e-6);
    }
  }

  // One layer only (sequential calibration): the same statistics for that layer, no others.
  {
    CalibOptions one = opts;
    one.only_layer = 1;
    const CalibStats s1 = collect_calib_stats(*model, tokens, one);
    ASSERT_EQ(s1.size(), 7u);
    for (const auto& [name, s] : s1) {
      SCOPED_TRACE(name);
      ASSERT_EQ(name.rfind("blk.1.", 0), 0u);
      const InputStats& full = *stats.at(name);
      EXPECT_EQ(s->n_tokens, full.n_tokens);
      EXPECT_EQ(s->xtx, full.xtx);
      EXPECT_EQ(s->sum_sq, full.sum_sq);
      EXPECT_EQ(s->sample, full.sample);
    }
  }

  // Hand check: rerun the first window's forward with an observer and recompute entries in double.
  CpuForward fwd(*model, BackendOptions{1, nullptr, 128});
  auto kv = fwd.allocate_kv(8, 16, KvDtype::f32);
  std::vector<double> xtx01(3, 0.0), abs3(1, 0.0);  // blk.1 ffn_down input: [0][0], [0][5], [7][3]; sum|x_9|
  float mx = 0;
  std::vector<float> sample_first;
  fwd.set_linear_observer([&](int64_t layer, LinearInput which, const float* x, int64_t n, int64_t cols) {
    if (layer != 1 || which != LinearInput::kFfnMid) return;
    for (int64_t t = 0; t < n; ++t) {
      const float* r = x + t * cols;
      xtx01[0] += double(r[0]) * r[0], xtx01[1] += double(r[0]) * r[5], xtx01[2] += double(r[7]) * r[3];
      abs3[0] += std::fabs(double(r[9]));
      mx = std::max(mx, std::fabs(r[11]));
    }
    sample_first.assign(x + 3 * cols, x + 4 * cols);  // token 3: the first sampled row (300 / 80 = 3)
  });
  ForwardBatch b;
  std::vector<double> tot(3, 0.0), tot_abs(1, 0.0);
  float tot_mx = 0;
  for (int64_t first = 0; first < 300; first += 128) {
    const int64_t n = std::min<int64_t>(128, 300 - first);
    b.clear();
    b.tokens.assign(tokens.begin() + first, tokens.begin() + first + n);
    for (int64_t i = 0; i < n; ++i) b.positions.push_back(int32_t(i)), b.seq.push_back(0);
    b.block_tables.push_back({0, 1, 2, 3, 4, 5, 6, 7});
    xtx01.assign(3, 0.0), abs3.assign(1, 0.0), mx = 0;
    fwd.forward(b, *kv, nullptr);
    if (first == 0) {
      const InputStats& s = *stats.at("blk.1.ffn_down.weight");
      for (int64_t k = 0; k < s.cols; ++k) EXPECT_FLOAT_EQ(s.sample[k], sample_first[k]);
    }
    for (int k = 0; k < 3; ++k) tot[k] += xtx01[k];
    tot_abs[0] += abs3[0], tot_mx = std::max(tot_mx, mx);
  }
  const InputStats& s = *stats.at("blk.1.ffn_down.weight");
  const int64_t n = s.cols;
  EXPECT_NEAR(s.xtx[0], tot[0], 1e-5 * std::fabs(tot[0]));
  EXPECT_NEAR(s.xtx[0 * n + 5], tot[1], 1e-5 * std::sqrt(s.xtx[0] * s.xtx[5 * n + 5]));
  EXPECT_NEAR(s.xtx[5 * n + 0], tot[1], 1e-5 * std::sqrt(s.xtx[0] * s.xtx[5 * n + 5]));
  EXPECT_NEAR(s.xtx[7 * n + 3], tot[2], 1e-5 * std::sqrt(s.xtx[7 * n + 7] * s.xtx[3 * n + 3]));
  EXPECT_NEAR(s.sum_abs[9], tot_abs[0], 1e-9 * tot_abs[0]);
  EXPECT_EQ(s.max_abs[11], tot_mx);
}

// The X^T X kernel against a double loop, for widths around its tiles and panel sizes.
TEST(CalibStats, XtxKernelMatchesDouble) {
  std::mt19937 rng(4);
  std::normal_distribution<float> nd;
  for (int64_t cols : {8, 17, 64, 172, 576, 1536}) {
    for (int64_t n : {1, 7, 128}) {
      std::vector<float> x(static_cast<size_t>(n * cols));
      for (float& v : x) v = nd(rng);
      const int64_t pw = quantize_detail::panel_width();
      std::vector<float> p(static_cast<size_t>((cols + pw - 1) / pw * pw * n));
      quantize_detail::pack_panels(x.data(), n, cols, p.data());
      std::vector<double> out(static_cast<size_t>(cols * cols), 0.0);
      for (int64_t i0 = 0; i0 < cols; i0 += 8) quantize_detail::xtx_rows(p.data(), n, cols, i0, std::min(cols, i0 + 8), out.data());
      for (int64_t i = 0; i < cols; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          if (j < i) {
            ASSERT_EQ(out[i * cols + j], 0.0) << cols << " " << n << " " << i << " " << j;
            continue;
          }
          double ref = 0;
          for (int64_t t = 0; t < n; ++t) ref += double(x[t * cols + i]) * x[t * cols + j];
          ASSERT_NEAR(out[i * cols + j], ref, 1e-4 * std::sqrt(double(n)) + 1e-5) << cols << " " << n << " " << i << " " << j;
        }
    }
  }
}

// first_token_weight: X^T X gains (w - 1) x0 x0^T per window (x0: the window's first token); the rest is unchanged.
TEST(CalibStats, FirstTokenWeight) {
  const std::string model_path = test::shared_file("models/stories260K.gguf");
  const std::string text_path = test::shared_file("corpus/tinystories-valid-head.txt");
  TINFER_REQUIRE_FILE(model_path, "stories260K.gguf");
  TINFER_REQUIRE_FILE(text_path, "tinystories-valid-head.txt");
  auto model = Model::load(model_path);
  std::vector<int32_t> tokens = model->tokenizer().encode(read_text(text_path, 700000, 3000), true);
  CalibOptions opts;
  opts.max_tokens = 200, opts.ctx = 64, opts.sample_rows = 8, opts.threads = 2;
  const CalibStats a = collect_calib_stats(*model, tokens, opts);
  opts.first_token_weight = 4;
  const CalibStats b = collect_calib_stats(*model, tokens, opts);
  // The first tokens' ffn_down inputs of layer 2, window by window.
  CpuForward fwd(*model, BackendOptions{1, nullptr, 64});
  auto kv = fwd.allocate_kv(4, 16, KvDtype::f32);
  std::vector<float> x0;
  fwd.set_linear_observer([&](int64_t layer, LinearInput which, const float* x, int64_t, int64_t cols) {
    if (layer == 2 && which == LinearInput::kFfnMid) x0.insert(x0.end(), x, x + cols);
  });
  for (int64_t w0 = 0; w0 < 200; w0 += 64) {
    ForwardBatch fb;
    fb.tokens = {tokens[size_t(w0)]}, fb.positions = {0}, fb.seq = {0}, fb.block_tables = {{0}};
    fwd.forward(fb, *kv, nullptr);
  }
  const InputStats& sa = *a.at("blk.2.ffn_down.weight");
  const InputStats& sb = *b.at("blk.2.ffn_down.weight");
  const int64_t n = sa.cols;
  ASSERT_EQ(x0.size(), size_t(4 * n));
  EXPECT_EQ(sb.n_tokens, 200);
  for (auto [i, j] : {std::pair<int64_t, int64_t>{0, 0}, {5, 9}, {100, 3}, {171, 171}}) {
    double extra = 0;
    for (int w = 0; w < 4; ++w) extra += 3.0 * x0[w * n + i] * x0[w * n + j];
    EXPECT_NEAR(sb.xtx[i * n + j] - sa.xtx[i * n + j], extra, 1e-4 * std::sqrt(sb.xtx[i * n + i] * sb.xtx[j * n + j]));
    EXPECT_EQ(sb.xtx[i * n + j], sb.xtx[j * n + i]);
  }
  for (int64_t c = 0; c < n; ++c) EXPECT_EQ(sa.sum_sq[c], sb.sum_sq[c]);
}

TEST(CalibStats, RejectsOneToken) {
  const std::string model_path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model_path, "stories260K.gguf");
  auto model = Model::load(model_path);
  EXPECT_THROW(collect_calib_stats(*model, {1}, CalibOptions{}), std::exception);
}

// Timing on the default model: TINFER_CALIB_BENCH=N runs N calibration tokens on SmolLM2-135M.
TEST(CalibStats, SmolLM2Timing) {
  const char* env = std::getenv("TINFER_CALIB_BENCH");
  if (!env) GTEST_SKIP() << "set TINFER_CALIB_BENCH=<tokens> to time calibration on the default model";
  const std::string model_path = test::default_model();
  const std::string text_path = test::shared_file("corpus/wikitext-2-test.raw");
  TINFER_REQUIRE_FILE(model_path, "default model");
  TINFER_REQUIRE_FILE(text_path, "wikitext-2-test.raw");
  auto model = Model::load(model_path);
  std::vector<int32_t> tokens = model->tokenizer().encode(read_text(text_path, 600000, 400000), false);
  CalibOptions opts;
  opts.max_tokens = std::atoll(env);
  const auto t0 = std::chrono::steady_clock::now();
  CalibStats stats = collect_calib_stats(*model, tokens, opts);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("calibration: %lld tokens in %.2f s (%zu inputs)\n", (long long)stats.begin()->second->n_tokens, sec,
              stats.size());
}

}  // namespace
}  // namespace tinfer

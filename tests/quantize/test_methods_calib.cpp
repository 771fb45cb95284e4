// Calibration statistics on stories260K (and a timing run on SmolLM2-135M when asked for).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/test_env.h"
#include "model/cpu_forward.h"
#include "model/model.h"
#include "quantize/calib_stats.h"
#include "quantize/float_model.h"

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

// The statistics of `tinfer ppl --kld-base` and the base-file format, without a model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "tinfer/error.h"
#include "quality/logits_file.h"
#include "quality/quality_stats.h"

namespace tinfer::cli {
namespace {

// Every target 1..n-1 scored exactly once, in order; each window at most ctx tokens; later windows
// score at most `stride` targets; stride = ctx-1 gives windows overlapping by one token.
TEST(ScoreWindows, CoverEveryTargetOnce) {
  for (int64_t n : {2, 3, 17, 64, 65, 100, 513})
    for (int64_t ctx : {2, 5, 16, 64})
      for (int64_t stride = 1; stride < ctx; stride += (ctx > 8 ? 5 : 1)) {
        auto w = score_windows(n, ctx, stride);
        int64_t next = 1;
        for (size_t i = 0; i < w.size(); ++i) {
          EXPECT_LE(w[i].end - w[i].begin, ctx);
          EXPECT_EQ(w[i].first_target, next) << n << " " << ctx << " " << stride;
          EXPECT_GT(w[i].first_target, w[i].begin);
          if (i > 0) {
            EXPECT_LE(w[i].end - w[i].first_target, stride);
          }
          next = w[i].end;
        }
        EXPECT_EQ(next, n);
      }
  auto w = score_windows(10, 4, 3);  // today's schedule: [0,4) [3,7) [6,10)
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[1].begin, 3);
  EXPECT_EQ(w[1].first_target, 4);
  EXPECT_EQ(w[2].begin, 6);
  EXPECT_EQ(w[2].end, 10);
  EXPECT_THROW(score_windows(10, 4, 4), Error);
  EXPECT_THROW(score_windows(10, 4, 0), Error);
}

// llama-perplexity's schedule: disjoint chunks of ctx, each scoring targets ctx/2+1 .. ctx-1 of its own (the
// logits of positions ctx/2 .. ctx-2), the tail past the last whole chunk unscored; BOS fed at each chunk's start.
TEST(ScoreWindows, LlamaChunks) {
  auto w = llama_chunk_windows(11, 4, -1);  // [0,4) [4,8); tokens 8..10 unscored
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].begin, 0);
  EXPECT_EQ(w[0].end, 4);
  EXPECT_EQ(w[0].first_target, 3);
  EXPECT_EQ(w[0].first_token, -1);
  EXPECT_EQ(w[1].begin, 4);
  EXPECT_EQ(w[1].end, 8);
  EXPECT_EQ(w[1].first_target, 7);
  const auto b = llama_chunk_windows(1024, 512, 7);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].first_target, 512 + 257);
  EXPECT_EQ(b[1].end - b[1].first_target, 255);  // llama.cpp's count: n_ctx - first - 1
  EXPECT_EQ(b[1].first_token, 7);
  EXPECT_THROW(llama_chunk_windows(3, 4, -1), Error);
  EXPECT_THROW(llama_chunk_windows(10, 3, -1), Error);
}

TEST(QualityStats, LogSoftmaxAndKl) {
  const float logits[3] = {1.0f, 3.0f, 2.0f};
  double lp[3], lq[3];
  EXPECT_EQ(log_softmax(logits, 3, lp), 1);
  EXPECT_NEAR(std::exp(lp[0]) + std::exp(lp[1]) + std::exp(lp[2]), 1.0, 1e-15);
  EXPECT_EQ(kl_divergence(lp, lp, 3), 0.0);
  const float other[3] = {0.0f, 0.0f, 0.0f};
  log_softmax(other, 3, lq);
  double expect = 0;  // KL(p || uniform) = log 3 - H(p)
  for (double x : lp) expect += std::exp(x) * x;
  EXPECT_NEAR(kl_divergence(lp, lq, 3), expect + std::log(3.0), 1e-15);
}

TEST(QualityStats, PercentileInterpolatesLikeNumpy) {
  std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 50), 2.5);   // np.percentile_sorted([1,2,3,4], 50)
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 99), 3.97);  // np.percentile_sorted([1,2,3,4], 99)
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 100), 4);
  EXPECT_DOUBLE_EQ(percentile_sorted({7}, 99), 7);
}

// Hand-computed: nll_base {1, 2}, nll_this {1.5, 2.1}: means 1.5 and 1.8, var/n 0.25 and 0.09 and cov/n 0.15.
TEST(QualityStats, DeltaMethod) {
  QualityAccumulator acc;
  acc.add(1.0, 1.5, 0.25, true);
  acc.add(2.0, 2.1, 0.5, false);
  QualitySummary s = acc.summarize();
  const double pb = std::exp(1.5), pt = std::exp(1.8);
  EXPECT_DOUBLE_EQ(s.dppl, pt - pb);
  EXPECT_NEAR(s.dppl_se, std::sqrt(pt * pt * 0.09 + pb * pb * 0.25 - 2 * pt * pb * 0.15), 1e-12);
  EXPECT_NEAR(s.ln_ratio, 0.3, 1e-15);
  EXPECT_NEAR(s.ln_ratio_se, std::sqrt(0.09 + 0.25 - 0.3), 1e-12);
  EXPECT_DOUBLE_EQ(s.kl_mean, 0.375);
  EXPECT_DOUBLE_EQ(s.kl_max, 0.5);
  EXPECT_DOUBLE_EQ(s.top1, 0.5);
}

// A written file reads back: header, tokens, records decoded within half a code step and renormalized.
TEST(LogitsFile, RoundTripAndTruncation) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "tinfer_quality_rt.tkld").string();
  LogitsFileInfo info{{5, 1, 2, 0x1234}, 5, 4, 3, {1, 3, 4, 0, 2}, 4, "label"};
  const float logits[5] = {0.5f, -1.0f, 3.0f, -40.0f, 2.0f};
  double lp[5];
  const int32_t top = log_softmax(logits, 5, lp);
  {
    LogitsWriter w(path, info);
    for (uint32_t t = 1; t < 5; ++t) w.write(t, top, -lp[info.tokens[t]], lp);
    w.finish();
  }
  {
    LogitsReader r(path);
    EXPECT_EQ(r.info().tokens, info.tokens);
    EXPECT_EQ(r.info().vocab, info.vocab);
    EXPECT_EQ(r.info().label, "label");
    LogitsRecord rec;
    r.next(1, rec);
    EXPECT_EQ(rec.argmax, 2);
    EXPECT_EQ(rec.nll, -lp[3]);
    for (int i = 0; i < 5; ++i)
      if (i != 3) {  // token 3 sits under the 32-nat floor
        EXPECT_NEAR(rec.logp[i], lp[i], 1.0 / 4096 + 1e-6) << i;
      }
    EXPECT_LT(kl_divergence(lp, rec.logp.data(), 5), 1e-7);
    EXPECT_THROW(r.next(3, rec), Error);  // the second record scores token 2
  }
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t cut : {size_t(0), size_t(10), size_t(64), bytes.size() - 1}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, cut);
    EXPECT_THROW(LogitsReader{path}, Error) << cut;
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tinfer::cli

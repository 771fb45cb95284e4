// Verification of drafts (commit_run) on a 5-token vocabulary, over 200,000 seeds: with temperature 1 the
// committed tokens at positions 0 and 1 follow the target rows p_0 and p_1 (chi-square, 4 degrees of freedom,
// below the 0.001 critical value 18.47) and the draft at position 0 is kept with probability p_0(draft), which
// is the standard rejection rule's acceptance min(1, p/q) for a deterministic draft (q = the point mass); every
// committed run is exactly what the sampler draws without drafts (same seed); greedy keeps a draft iff it is
// the argmax; and the statistic does reject a biased rule, so the test can fail.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "engine/decoding/speculator.h"
#include "tinfer/sampler.h"

namespace tinfer {
namespace {

constexpr int V = 5;
using Row = std::array<float, V>;

const std::array<Row, 3> kP = {Row{0.50f, 0.20f, 0.15f, 0.10f, 0.05f}, Row{0.05f, 0.05f, 0.30f, 0.40f, 0.20f},
                               Row{0.20f, 0.20f, 0.20f, 0.20f, 0.20f}};

double chi2(const std::array<int64_t, V>& counts, const Row& p) {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  double s = 0;
  for (int t = 0; t < V; ++t) {
    const double e = double(n) * p[size_t(t)];
    s += (double(counts[size_t(t)]) - e) * (double(counts[size_t(t)]) - e) / e;
  }
  return s;
}

std::vector<float> logit_rows() {  // log p: softmax at temperature 1 gives p back
  std::vector<float> rows;
  for (const Row& r : kP)
    for (float p : r) rows.push_back(std::log(p));
  return rows;
}

SamplingParams at(float temperature, uint64_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = seed;
  return p;
}

TEST(SpecCommit, SampledDraftsKeepTheTargetDistribution) {
  const std::vector<float> rows = logit_rows();
  const std::vector<kv::Token> draft = {1, 3};
  std::array<int64_t, V> first{}, second{};
  int64_t kept0 = 0, both = 0;
  const int64_t trials = 200000;
  std::vector<SampleResult> out, plain;
  for (int64_t seed = 0; seed < trials; ++seed) {
    Sampler s(at(1.0f, uint64_t(seed)), V);
    const int kept = commit_run(s, rows.data(), V, draft, &out);
    ASSERT_EQ(out.size(), size_t(kept) + 1);
    ++first[size_t(out[0].token)];
    if (kept >= 1) ++second[size_t(out[1].token)], ++kept0;
    both += kept == 2;
    if (seed < 2000) {  // token for token what the sampler draws without drafts
      Sampler ref(at(1.0f, uint64_t(seed)), V);
      for (size_t j = 0; j < out.size(); ++j) {
        const int32_t t = ref.sample(rows.data() + j * V).token;
        ref.accept(t);
        ASSERT_EQ(out[j].token, t) << "seed " << seed << " position " << j;
      }
    }
  }
  EXPECT_LT(chi2(first, kP[0]), 18.47);
  EXPECT_LT(chi2(second, kP[1]), 18.47);
  EXPECT_NEAR(double(kept0) / double(trials), kP[0][1], 0.005);             // p_0(draft_0)
  EXPECT_NEAR(double(both) / double(trials), kP[0][1] * kP[1][3], 0.005);  // p_0(d_0) p_1(d_1)
}

TEST(SpecCommit, GreedyKeepsExactlyTheArgmax) {
  const std::vector<float> rows = logit_rows();  // argmaxes: 0, 3, then 0 (ties: lowest id)
  std::vector<SampleResult> out;
  Sampler a(at(0.0f, 1), V);
  EXPECT_EQ(commit_run(a, rows.data(), V, std::vector<kv::Token>{0, 3}, &out), 2);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].token, 0);
  Sampler b(at(0.0f, 1), V);
  EXPECT_EQ(commit_run(b, rows.data(), V, std::vector<kv::Token>{0, 2}, &out), 1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].token, 3);  // the correction
  EXPECT_EQ(b.n_generated(), 2);
  Sampler c(at(0.0f, 1), V);
  EXPECT_EQ(commit_run(c, rows.data(), V, std::vector<kv::Token>{}, &out), 0);  // no draft: one plain token
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].token, 0);
}

TEST(SpecCommit, BiasedRuleWouldFailTheTest) {
  // Always keeping the draft makes position 0 the point mass at it: far beyond the bound.
  std::array<int64_t, V> biased{};
  biased[1] = 200000;
  EXPECT_GT(chi2(biased, kP[0]), 18.47);
  // Drawing from q instead of p: also rejected.
  const Row q = {0.10f, 0.40f, 0.10f, 0.30f, 0.10f};
  std::mt19937_64 rng(7);
  std::discrete_distribution<int> d(q.begin(), q.end());
  std::array<int64_t, V> from_q{};
  for (int n = 0; n < 200000; ++n) ++from_q[size_t(d(rng))];
  EXPECT_GT(chi2(from_q, kP[0]), 18.47);
}

}  // namespace
}  // namespace tinfer

// The speculative acceptance rule on a 5-token vocabulary: over 200,000 trials (fixed seed) with drafts
// drawn from q, the committed tokens at positions 0 and 1 follow the target rows p_0 and p_1 (chi-square,
// 4 degrees of freedom, below the 0.001 critical value 18.47), for a stochastic and for a deterministic
// drafter; the acceptance rate at position 0 is sum_x min(p, q); a draft from q = p is always kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>

#include "engine/decoding/spec_verify.h"

namespace tinfer {
namespace {

constexpr int V = 5;
using Row = std::array<float, V>;

int32_t sample(const Row& r, double u) {
  double acc = 0;
  for (int t = 0; t < V; ++t) {
    acc += r[size_t(t)];
    if (u < acc) return t;
  }
  return V - 1;
}

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

struct Trials {
  std::array<int64_t, V> first{}, second{};
  int64_t accepted0 = 0, trials = 0;
};

// Three target rows, drafts of 2 tokens; q rows given (stochastic drafter) or null (a fixed guess per row).
Trials run(const std::array<Row, 3>& p, const std::array<Row, 2>* q, const std::array<int32_t, 2>& fixed) {
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  std::array<float, 3 * V> pf{};
  std::array<float, 2 * V> qf{};
  for (int i = 0; i < 3; ++i)
    for (int t = 0; t < V; ++t) pf[size_t(i * V + t)] = p[size_t(i)][size_t(t)];
  if (q)
    for (int i = 0; i < 2; ++i)
      for (int t = 0; t < V; ++t) qf[size_t(i * V + t)] = (*q)[size_t(i)][size_t(t)];
  Trials r;
  for (int n = 0; n < 200000; ++n) {
    std::array<int32_t, 2> draft = fixed;
    if (q) draft = {sample((*q)[0], U(rng)), sample((*q)[1], U(rng))};
    std::array<double, 6> u{};
    for (double& x : u) x = U(rng);
    const SpecVerdict v = verify_sampled(pf.data(), q ? qf.data() : nullptr, V, draft,
                                         [&](int i, int which) { return u[size_t(2 * i + which)]; });
    EXPECT_TRUE(v.accepted >= 0 && v.accepted <= 2 && v.next >= 0 && v.next < V);
    if (v.accepted < 0 || v.accepted > 2 || v.next < 0 || v.next >= V) return r;
    const int32_t t0 = v.accepted >= 1 ? draft[0] : v.next;
    ++r.first[size_t(t0)];
    if (v.accepted >= 1) ++r.second[size_t(v.accepted >= 2 ? draft[1] : v.next)];
    r.accepted0 += v.accepted >= 1;
    ++r.trials;
  }
  return r;
}

const std::array<Row, 3> kP = {Row{0.50f, 0.20f, 0.15f, 0.10f, 0.05f}, Row{0.05f, 0.05f, 0.30f, 0.40f, 0.20f},
                               Row{0.20f, 0.20f, 0.20f, 0.20f, 0.20f}};

TEST(SpecVerify, StochasticDraftKeepsTheTargetDistribution) {
  const std::array<Row, 2> q = {Row{0.10f, 0.40f, 0.10f, 0.30f, 0.10f}, Row{0.30f, 0.30f, 0.10f, 0.10f, 0.20f}};
  const Trials r = run(kP, &q, {});
  EXPECT_LT(chi2(r.first, kP[0]), 18.47);
  EXPECT_LT(chi2(r.second, kP[1]), 18.47);
  double overlap = 0;  // P(accept at 0) = sum min(p, q)
  for (int t = 0; t < V; ++t) overlap += std::min(kP[0][size_t(t)], q[0][size_t(t)]);
  EXPECT_NEAR(double(r.accepted0) / double(r.trials), overlap, 0.005);
}

TEST(SpecVerify, DeterministicDraftKeepsTheTargetDistribution) {
  const Trials r = run(kP, nullptr, {1, 3});
  EXPECT_LT(chi2(r.first, kP[0]), 18.47);
  EXPECT_LT(chi2(r.second, kP[1]), 18.47);
  EXPECT_NEAR(double(r.accepted0) / double(r.trials), kP[0][1], 0.005);  // p_0(guess)
}

TEST(SpecVerify, WrongRuleWouldFailTheTest) {
  // The same statistic on a biased sample (always keep the draft) must exceed the bound: the test can fail.
  const std::array<Row, 2> q = {Row{0.10f, 0.40f, 0.10f, 0.30f, 0.10f}, Row{0.30f, 0.30f, 0.10f, 0.10f, 0.20f}};
  std::array<int64_t, V> biased{};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  for (int n = 0; n < 200000; ++n) ++biased[size_t(sample(q[0], U(rng)))];
  EXPECT_GT(chi2(biased, kP[0]), 18.47);
}

TEST(SpecVerify, DraftFromTheTargetIsAlwaysKept) {
  const std::array<Row, 2> q = {kP[0], kP[1]};
  const Trials r = run(kP, &q, {});
  EXPECT_EQ(r.accepted0, r.trials);
  EXPECT_LT(chi2(r.first, kP[0]), 18.47);
}

}  // namespace
}  // namespace tinfer

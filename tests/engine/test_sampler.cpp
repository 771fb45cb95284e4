// Sampler tests: exact candidate sets per filter, penalty arithmetic, seed determinism, the empirical
// distribution of temperature sampling, logprobs, and validation messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <limits>
#include <set>

#include "tinfer/error.h"
#include "tinfer/sampler.h"

namespace tinfer {
namespace {

std::set<int32_t> ids(std::span<const Candidate> c) {
  std::set<int32_t> s;
  for (const auto& x : c) s.insert(x.token);
  return s;
}

// Logits whose softmax is exactly `probs`.
std::vector<float> log_of(const std::vector<float>& probs) {
  std::vector<float> l;
  for (float p : probs) l.push_back(std::log(p));
  return l;
}

SamplingParams params_t1() {
  SamplingParams p;
  p.seed = 1;
  return p;
}

// Reference chain with full sorts, HF-warper style: temperature, top-k, top-p, min-p in sequence.
std::vector<std::pair<int32_t, double>> reference(const std::vector<float>& logits, const SamplingParams& p) {
  std::vector<std::pair<int32_t, double>> v;  // (id, scaled logit), best first
  for (size_t i = 0; i < logits.size(); ++i) v.push_back({int32_t(i), double(logits[i] / p.temperature)});
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); });
  if (p.top_k > 0 && size_t(p.top_k) < v.size()) v.resize(p.top_k);
  auto probs = [&] {
    std::vector<double> q;
    double s = 0;
    for (auto& x : v) s += std::exp(x.second - v[0].second);
    for (auto& x : v) q.push_back(std::exp(x.second - v[0].second) / s);
    return q;
  };
  if (p.top_p < 1) {
    auto q = probs();
    double cum = 0;
    size_t keep = v.size();
    for (size_t j = 0; j < q.size(); ++j) {
      cum += q[j];
      if (cum >= p.top_p) { keep = j + 1; break; }
    }
    v.resize(keep);
  }
  if (p.min_p > 0) {
    auto q = probs();
    size_t keep = 0;
    while (keep < q.size() && q[keep] >= p.min_p * q[0]) ++keep;
    v.resize(keep);
  }
  auto q = probs();
  std::vector<std::pair<int32_t, double>> out;
  for (size_t j = 0; j < v.size(); ++j) out.push_back({v[j].first, q[j]});
  return out;
}

TEST(Sampler, GreedyIsArgmax) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 3);
  SamplingParams p;
  p.temperature = 0;
  p.top_k = 3;  // ignored when greedy
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> l(1000);
    for (auto& x : l) x = nd(rng);
    Sampler s(p, int32_t(l.size()));
    EXPECT_EQ(s.sample(l.data()).token, int32_t(std::max_element(l.begin(), l.end()) - l.begin()));
  }
  std::vector<float> tie = {1, 3, 3, 2};
  Sampler s(p, 4);
  EXPECT_EQ(s.sample(tie.data()).token, 1);  // lowest id wins a tie
}

TEST(Sampler, TopK) {
  std::vector<float> l = {1, 5, 3, 4, 2};
  auto p = params_t1();
  p.top_k = 2;
  Sampler s(p, 5);
  auto c = s.candidates(l.data());
  EXPECT_EQ(ids(c), (std::set<int32_t>{1, 3}));
  // logit is relative to the best (5): the weights are exp(0) and exp(-1).
  for (auto& x : c) EXPECT_NEAR(x.prob, std::exp(x.logit) / (1.0 + std::exp(-1.0)), 1e-6);
  for (auto& x : c) EXPECT_FLOAT_EQ(x.logit, l[x.token] - 5.0f);
}

TEST(Sampler, TopP) {
  auto l = log_of({0.5f, 0.2f, 0.15f, 0.1f, 0.05f});
  auto p = params_t1();
  for (auto [top_p, want] : std::vector<std::pair<float, std::set<int32_t>>>{
           {0.4f, {0}}, {0.65f, {0, 1}}, {0.8f, {0, 1, 2}}, {0.9f, {0, 1, 2, 3}}, {1.0f, {0, 1, 2, 3, 4}}}) {
    p.top_p = top_p;
    Sampler s(p, 5);
    auto c = s.candidates(l.data());
    EXPECT_EQ(ids(c), want) << "top_p " << top_p;
    float sum = 0;
    for (auto& x : c) sum += x.prob;
    EXPECT_NEAR(sum, 1.0f, 1e-6);
  }
}

TEST(Sampler, MinP) {
  auto l = log_of({0.5f, 0.2f, 0.15f, 0.1f, 0.05f});
  auto p = params_t1();
  for (auto [min_p, want] : std::vector<std::pair<float, std::set<int32_t>>>{
           {0.25f, {0, 1, 2}}, {0.35f, {0, 1}}, {0.9f, {0}}, {0.05f, {0, 1, 2, 3, 4}}}) {
    p.min_p = min_p;
    Sampler s(p, 5);
    EXPECT_EQ(ids(s.candidates(l.data())), want) << "min_p " << min_p;
  }
}

TEST(Sampler, TemperatureScalesLogits) {
  std::vector<float> l = {0.0f, 1.0f, 2.0f};
  auto p = params_t1();
  p.temperature = 2.0f;
  Sampler s(p, 3);
  auto c = s.candidates(l.data());
  const double z = 1 + std::exp(0.5) + std::exp(1.0);
  for (auto& x : c) EXPECT_NEAR(x.prob, std::exp(x.token / 2.0) / z, 1e-6);
}

// The pruned, partially sorted chain matches a full-sort reference on random logits and combinations.
TEST(Sampler, FilterChainMatchesReference) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0, 2);
  int checked = 0;
  for (int32_t V : {7, 300, 5000}) {
    for (int top_k : {0, 1, 5, 40, 6000})
      for (float top_p : {1.0f, 0.95f, 0.5f, 0.1f})
        for (float min_p : {0.0f, 0.02f, 0.3f})
          for (float temp : {0.5f, 1.0f, 1.7f}) {
            std::vector<float> l(V);
            for (auto& x : l) x = nd(rng);
            SamplingParams p;
            p.seed = 3;
            p.top_k = top_k, p.top_p = top_p, p.min_p = min_p, p.temperature = temp;
            Sampler s(p, V);
            auto c = s.candidates(l.data());
            auto ref = reference(l, p);
            std::set<int32_t> want;
            for (auto& r : ref) want.insert(r.first);
            ASSERT_EQ(ids(c), want) << "V " << V << " k " << top_k << " p " << top_p << " min_p " << min_p;
            std::vector<double> prob(V, 0);
            for (auto& r : ref) prob[r.first] = r.second;
            for (auto& x : c) EXPECT_NEAR(x.prob, prob[x.token], 1e-5);
            ++checked;
          }
  }
  EXPECT_EQ(checked, 3 * 5 * 4 * 3 * 3);
}

TEST(Sampler, PenaltiesArithmetic) {
  // Repetition over prompt + output (HF/vLLM), presence/frequency over the output only (OpenAI/vLLM).
  std::vector<float> l = {2.0f, -2.0f, 1.0f, 0.5f, 3.0f};
  auto p = params_t1();
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  std::vector<int32_t> prompt = {0, 1, 0};
  Sampler s(p, 5, prompt);
  s.accept(2);
  s.accept(2);
  s.accept(4);
  EXPECT_EQ(s.n_generated(), 3);
  std::vector<float> want = {
      2.0f / 2,                       // prompt token: repetition only
      -2.0f * 2,                      // negative logit: multiplied
      1.0f / 2 - 0.5f - 0.25f * 2,    // generated twice
      0.5f,                           // never seen
      3.0f / 2 - 0.5f - 0.25f * 1,    // generated once
  };
  auto c = s.candidates(l.data());
  ASSERT_EQ(c.size(), 5u);
  const float best = *std::max_element(want.begin(), want.end());  // logits come relative to the best
  for (auto& x : c) EXPECT_FLOAT_EQ(x.logit, want[x.token] - best) << "token " << x.token;

  // Greedy sees the penalised logits: token 4 drops from 3.0 to 0.75, below token 0's 1.0.
  p.temperature = 0;
  Sampler g(p, 5, prompt);
  g.accept(2), g.accept(2), g.accept(4);
  EXPECT_EQ(g.sample(l.data()).token, 0);
}

TEST(Sampler, SeedDeterminism) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0, 1);
  std::vector<std::vector<float>> steps(64, std::vector<float>(500));
  for (auto& st : steps)
    for (auto& x : st) x = nd(rng);
  auto run = [&](uint64_t seed, bool interleave) {
    SamplingParams p;
    p.seed = seed, p.top_p = 0.9f, p.frequency_penalty = 0.3f;
    Sampler s(p, 500);
    Sampler other(SamplingParams{}, 500);  // another request in the "batch"
    std::vector<int32_t> out;
    for (auto& st : steps) {
      if (interleave) other.accept(other.sample(st.data()).token);
      out.push_back(s.sample(st.data()).token);
      s.accept(out.back());
    }
    return out;
  };
  EXPECT_EQ(run(42, false), run(42, true));
  EXPECT_EQ(run(42, false), run(42, false));
  EXPECT_NE(run(42, false), run(43, false));
  EXPECT_EQ(sample_uniform(9, 17), sample_uniform(9, 17));
  EXPECT_NE(sample_uniform(9, 17), sample_uniform(9, 18));
  SamplingParams r;  // no seed: resolved once, reported, and reusable
  Sampler a(r, 10);
  r.seed = a.seed();
  Sampler b(r, 10);
  EXPECT_EQ(b.seed(), a.seed());
}

// Every 64-bit value is a seed of its own: the top half of the range (negative as int64, which once
// meant "random") is deterministic and distinct from its low-half neighbour.
TEST(Sampler, SeedsUseAll64Bits) {
  std::vector<float> l(50, 0.0f);  // uniform: every draw depends on the seed alone
  auto run = [&](uint64_t seed) {
    SamplingParams p;
    p.seed = seed;
    Sampler s(p, 50);
    std::vector<int32_t> out;
    for (int i = 0; i < 32; ++i) s.accept(out.emplace_back(s.sample(l.data()).token));
    return out;
  };
  const uint64_t top = ~uint64_t{0};
  EXPECT_EQ(run(top), run(top));
  EXPECT_EQ(run(uint64_t{1} << 63), run(uint64_t{1} << 63));
  EXPECT_NE(run(top), run(top >> 1));
  EXPECT_NE(run(uint64_t{1} << 63), run(0));
}

// logit_bias is added before penalties and temperature: it moves greedy's argmax, bans a token at
// -100, and composes with the repetition penalty on the biased logit.
TEST(Sampler, LogitBias) {
  std::vector<float> l = {2.0f, 1.0f, 0.5f, -1.0f};
  SamplingParams g;
  g.temperature = 0.0f;
  g.logit_bias = {{3, 5.0f}};
  EXPECT_EQ(Sampler(g, 4).sample(l.data()).token, 3);
  g.logit_bias = {{0, -100.0f}};
  EXPECT_EQ(Sampler(g, 4).sample(l.data()).token, 1);
  SamplingParams t = params_t1();
  t.logit_bias = {{0, -100.0f}, {1, -100.0f}, {2, -100.0f}};
  Sampler s(t, 4);
  for (int i = 0; i < 50; ++i) {
    const int32_t tok = s.sample(l.data()).token;
    EXPECT_EQ(tok, 3);
    s.accept(tok);
  }
  // Bias first, then the penalty: token 3's logit -1 + 2 = 1 > 0 is divided by 2 (0.5), not multiplied.
  SamplingParams r;
  r.temperature = 1.0f, r.repetition_penalty = 2.0f, r.logit_bias = {{3, 2.0f}};
  Sampler rs(r, 4, std::vector<int32_t>{3});
  auto c = rs.candidates(l.data());
  double z = 0, p3 = 0;
  for (float x : {2.0f, 1.0f, 0.5f, 0.5f}) z += std::exp(x);
  for (const auto& x : c)
    if (x.token == 3) p3 = x.prob;
  EXPECT_NEAR(p3, std::exp(0.5) / z, 1e-5);
  SamplingParams bad;
  bad.logit_bias = {{9, 1.0f}};
  EXPECT_THROW(Sampler(bad, 4), Error);  // id outside the vocabulary
}

TEST(Sampler, TemperatureSamplingMatchesSoftmax) {
  std::vector<float> l = {0.0f, 0.5f, 1.0f, 1.5f, -1.0f};
  SamplingParams p;
  p.seed = 1234, p.temperature = 0.8f;
  Sampler s(p, 5);
  const int n = 40000;
  std::vector<int> hits(5, 0);
  for (int i = 0; i < n; ++i) {
    int32_t t = s.sample(l.data()).token;
    ++hits[t];
    s.accept(t);  // advances the position; no penalties are set
  }
  double z = 0;
  for (float x : l) z += std::exp(x / 0.8);
  double chi2 = 0;
  for (int i = 0; i < 5; ++i) {
    double e = n * std::exp(l[i] / 0.8) / z;
    chi2 += (hits[i] - e) * (hits[i] - e) / e;
  }
  EXPECT_LT(chi2, 25.0) << "4 degrees of freedom: P(chi2 > 25) ~ 5e-5";  // seeded: deterministic
}

// Temperature alone takes the list-free draw (draw_tempered); any filter takes filter(). Both must draw from
// the same distribution: a vocabulary of 300 (several kExpChunk chunks, a partial last one) with masked
// and NaN logits, 60,000 draws each, the empirical frequencies against softmax(l / T), and the two paths
// against each other token by token where they share a seed (a top-k equal to the vocabulary is no filter
// for the distribution, but it routes the draw through filter()).
TEST(Sampler, TemperatureDrawWithoutListMatchesFilteredDraw) {
  const int V = 300;
  std::vector<float> l(V);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.5f);
  for (float& v : l) v = nd(rng);
  l[7] = -std::numeric_limits<float>::infinity();
  l[250] = std::numeric_limits<float>::quiet_NaN();
  const float T = 0.9f;
  SamplingParams dense;
  dense.seed = 99, dense.temperature = T;
  SamplingParams listed = dense;
  listed.top_k = V - 1;  // drops the NaN only (never a candidate anyway): the same distribution, via filter()
  Sampler a(dense, V), b(listed, V);
  const int n = 60000;
  std::vector<int> hits(V, 0);
  int same = 0;
  for (int i = 0; i < n; ++i) {
    const int32_t ta = a.sample(l.data()).token, tb = b.sample(l.data()).token;
    ASSERT_TRUE(ta != 7 && ta != 250) << "a masked or NaN logit was drawn";
    ++hits[size_t(ta)];
    same += ta == tb;
    a.accept(ta), b.accept(tb);
  }
  // Same u per position: the draws differ only where u falls within rounding of a bucket edge.
  EXPECT_GE(same, n - 5);
  double z = 0;
  for (float v : l)
    if (!std::isnan(v)) z += std::exp(double(v) / T);
  double chi2 = 0;
  int dof = -1;
  for (int t = 0; t < V; ++t) {
    if (t == 7 || t == 250) continue;
    const double e = n * std::exp(double(l[size_t(t)]) / T) / z;
    chi2 += (hits[size_t(t)] - e) * (hits[size_t(t)] - e) / e;
    ++dof;
  }
  EXPECT_LT(chi2, dof + 6.0 * std::sqrt(2.0 * dof)) << "chi2 with " << dof << " degrees of freedom";
}

TEST(Sampler, Logprobs) {
  std::vector<float> l = {1.0f, 3.0f, 2.0f, -1.0f};
  SamplingParams p;
  p.seed = 2, p.temperature = 0.3f, p.repetition_penalty = 1.5f, p.logprobs = true, p.top_logprobs = 3;
  Sampler s(p, 4, std::vector<int32_t>{1});
  const auto& r = s.sample(l.data());
  double z = 0;
  for (float x : l) z += std::exp(x);
  auto lp = [&](int i) { return float(l[i] - std::log(z)); };  // original logits: no penalty, no temperature
  EXPECT_NEAR(r.logprob, lp(r.token), 1e-5);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0].token, 1);
  EXPECT_EQ(r.top[1].token, 2);
  EXPECT_EQ(r.top[2].token, 0);
  for (auto& t : r.top) EXPECT_NEAR(t.logprob, lp(t.token), 1e-5);
  SamplingParams q;
  q.seed = 2;
  Sampler none(q, 4);
  EXPECT_TRUE(none.sample(l.data()).top.empty());
}

TEST(Sampler, Validation) {
  EXPECT_TRUE(SamplingParams{}.validate().empty());
  auto has = [](const std::vector<std::string>& errs, const std::string& key) {
    return std::any_of(errs.begin(), errs.end(), [&](auto& e) { return e.rfind(key, 0) == 0; });
  };
  SamplingParams p;
  p.temperature = -0.5f;
  p.top_k = -1;
  p.top_p = 0.0f;
  p.min_p = 1.5f;
  p.repetition_penalty = 0.0f;
  p.presence_penalty = 3.0f;
  p.frequency_penalty = -2.5f;
  p.logit_bias = {{1, 100.5f}};
  p.top_logprobs = 21;
  auto errs = p.validate();
  EXPECT_EQ(errs.size(), 9u);
  for (auto key : {"temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty",
                   "frequency_penalty", "logit_bias", "top_logprobs"})
    EXPECT_TRUE(has(errs, key)) << key;
  SamplingParams q;
  q.top_p = 1.01f;
  EXPECT_TRUE(has(q.validate(), "top_p"));
  q.top_p = 1.0f, q.temperature = NAN;
  EXPECT_TRUE(has(q.validate(), "temperature"));
  EXPECT_THROW(Sampler(p, 10), Error);
  EXPECT_THROW(Sampler(SamplingParams{}, 10, std::vector<int32_t>{10}), Error);
  EXPECT_THROW(Sampler(SamplingParams{}, 0), Error);
}

}  // namespace
}  // namespace tinfer

namespace tinfer {
namespace {

// A grammar's mask (bit t of word t / 32): only allowed tokens are ever drawn, greedy takes the best allowed one,
// penalties and logit_bias apply after the mask, and reported logprobs stay the model's own. Ragged vocabulary
// sizes (not a multiple of 32) and masks with all-ones, all-zero and mixed words.
TEST(Sampler, MaskAllowsOnlyItsTokens) {
  for (int32_t V : {5, 32, 33, 100, 1000}) {
    std::mt19937 rng(V);
    std::normal_distribution<float> nd(0, 2);
    std::vector<float> logits(static_cast<size_t>(V));
    for (float& l : logits) l = nd(rng);
    std::vector<uint32_t> mask((size_t(V) + 31) / 32, 0);
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < V; ++t)
      if (t < 32 ? (t % 3 == 1) : (t >= 64 && t < 96) || t % 7 == 2) {
        mask[size_t(t) / 32] |= 1u << (t % 32);
        allowed.push_back(t);
      }
    auto is_allowed = [&](int32_t t) { return std::find(allowed.begin(), allowed.end(), t) != allowed.end(); };
    int32_t best = allowed[0];
    for (int32_t t : allowed)
      if (logits[size_t(t)] > logits[size_t(best)]) best = t;
    SamplingParams g;
    g.temperature = 0;
    g.logprobs = true;
    Sampler greedy(g, V);
    const SampleResult& r = greedy.sample(logits.data(), mask.data());
    EXPECT_EQ(r.token, best) << "V " << V;
    Sampler plain(g, V);
    const float lp_unmasked = [&] {  // the model's own log-softmax at `best`
      float m = *std::max_element(logits.begin(), logits.end());
      double s = 0;
      for (float l : logits) s += std::exp(double(l - m));
      return float(double(logits[size_t(best)]) - (double(m) + std::log(s)));
    }();
    EXPECT_NEAR(r.logprob, lp_unmasked, 1e-5);
    SamplingParams p;
    p.temperature = 1.5f;
    p.top_k = 50;
    p.presence_penalty = 1.0f;
    p.logit_bias = {{best, -100.0f}};
    p.seed = 11;
    Sampler s(p, V);
    for (int i = 0; i < 500; ++i) {
      const SampleResult& x = s.sample(logits.data(), mask.data());
      ASSERT_TRUE(is_allowed(x.token)) << "V " << V << " token " << x.token;
      s.accept(x.token);
    }
    EXPECT_EQ(plain.sample(logits.data()).token,
              int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()));  // no mask: argmax
  }
}

// Temperatures that would overflow 1/T or w/T (report: T = 1e-38 gave the last vocabulary id, as NaN weights
// made the draw fall through) are greedy below kGreedyTemperature and finite above it; NaN logits and
// overflowing penalties never pick a token.
TEST(Sampler, TinyTemperatureIsGreedy) {
  std::vector<float> l = {1.0f, 7.5f, 30.0f, -4.0f, 29.0f, 0.0f};
  for (float t : {1.4e-45f, 1e-38f, 1e-37f, 1e-20f, 1e-6f, 9.9e-6f}) {
    SamplingParams p = params_t1();
    p.temperature = t;
    EXPECT_TRUE(p.greedy()) << t;
    Sampler s(p, 6);
    EXPECT_EQ(s.sample(l.data()).token, 2) << "T " << t;
    p.top_k = 1;
    Sampler k(p, 6);
    EXPECT_EQ(k.sample(l.data()).token, 2) << "T " << t << " top_k 1";
  }
  // Just above the greedy bound: still sampled, weights finite, the best token all but certain.
  SamplingParams p = params_t1();
  p.temperature = 2e-5f;
  EXPECT_FALSE(p.greedy());
  Sampler s(p, 6);
  auto c = s.candidates(l.data());
  double sum = 0;
  for (auto& x : c) {
    EXPECT_TRUE(std::isfinite(x.prob) && std::isfinite(x.logit)) << x.token;
    sum += x.prob;
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    p.seed = seed;
    Sampler d(p, 6);
    EXPECT_EQ(d.sample(l.data()).token, 2) << "seed " << seed;
  }
}

TEST(Sampler, HugeLogitsAndPenaltiesStayFinite) {
  // Logits near float's max: the old w/T - m/T overflowed at T = 0.5.
  std::vector<float> big = {3e38f, -3e38f, 2.9e38f, 1.0f};
  SamplingParams p = params_t1();
  p.temperature = 0.5f;
  Sampler s(p, 4);
  auto c = s.candidates(big.data());
  for (auto& x : c) EXPECT_TRUE(std::isfinite(x.prob)) << x.token;
  EXPECT_EQ(s.sample(big.data()).token, 0);
  // repetition_penalty 1e-38 divides a positive logit into inf: kept finite, so the draw is well defined.
  std::vector<float> l = {5.0f, 2.0f, 3.0f, -1.0f};
  std::vector<int32_t> prompt = {0, 3};
  for (float temp : {0.0f, 1.0f}) {
    SamplingParams r = params_t1();
    r.temperature = temp, r.repetition_penalty = 1e-38f;
    Sampler rs(r, 4, prompt);
    const int32_t tok = rs.sample(l.data()).token;
    EXPECT_EQ(tok, 0) << "T " << temp;  // token 0's 5 / 1e-38 overflows: clamped to float's max, still the best
  }
}

TEST(Sampler, NanLogitsNeverChosen) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> l = {nan, 0.5f, nan, 2.0f, nan};
  for (float temp : {0.0f, 1e-30f, 0.7f}) {
    SamplingParams p = params_t1();
    p.temperature = temp;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      p.seed = seed;
      Sampler s(p, 5);
      const int32_t tok = s.sample(l.data()).token;
      EXPECT_TRUE(tok == 1 || tok == 3) << "T " << temp << " got " << tok;
      if (temp < SamplingParams::kGreedyTemperature) {
        EXPECT_EQ(tok, 3);
      }
    }
  }
  // An infinite logit is the best token, drawn surely (its weight would be inf / inf).
  std::vector<float> inf = {1.0f, std::numeric_limits<float>::infinity(), 2.0f};
  SamplingParams p = params_t1();
  Sampler s(p, 3);
  EXPECT_EQ(s.sample(inf.data()).token, 1);
}

}  // namespace
}  // namespace tinfer

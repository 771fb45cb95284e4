// BeamSearch (engine/decoding/beam_search.h) on hand-made log-probabilities: continuations, ranking, stop
// handling (only within the top `width`), the length penalty, both stopping rules, max_tokens, width 1 = greedy.
#include "engine/decoding/beam_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "tinfer/error.h"

namespace tinfer {
namespace {

// A row of log-probabilities from probabilities (the log-softmax of log p is log p when they sum to 1).
std::vector<float> row(std::vector<double> p) {
  std::vector<float> r;
  for (double x : p) r.push_back(x > 0 ? float(std::log(x)) : -INFINITY);
  return r;
}

std::vector<BeamOrigin> step(BeamSearch& bs, const std::vector<std::vector<float>>& rows) {
  std::vector<std::vector<BeamToken>> conts;
  for (const auto& r : rows) conts.push_back(top_continuations(r, bs.num_continuations()));
  return bs.step(conts);
}

TEST(BeamSearchLogic, TopContinuationsAreLogSoftmaxBestFirstLowerIdOnTies) {
  const std::vector<float> logits{1.0f, 3.0f, 3.0f, NAN, -2.0f};
  const auto c = top_continuations(logits, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].token, 1);
  EXPECT_EQ(c[1].token, 2);
  EXPECT_EQ(c[2].token, 0);
  const double z = std::log(std::exp(1.0) + 2 * std::exp(3.0) + std::exp(-2.0));
  EXPECT_NEAR(c[0].logprob, 3.0 - z, 1e-12);
  EXPECT_NEAR(c[2].logprob, 1.0 - z, 1e-12);
  EXPECT_EQ(top_continuations(logits, 10).size(), 4u);  // every non-NaN id, no more
}

TEST(BeamSearchLogic, RanksAllBeamsCandidatesByCumulativeLogprob) {
  BeamSearch bs({.width = 2, .max_tokens = 10});
  auto o = step(bs, {row({0.1, 0.5, 0.4, 0.0})});
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0].parent, 0);
  EXPECT_EQ(o[0].token, 1);
  EXPECT_EQ(o[1].token, 2);
  // Beam [1] (0.5) is sure of nothing, beam [2] (0.4) is sure of token 3: [2,3] (0.4 * 0.9) beats [1,x] (0.5 * 0.3).
  o = step(bs, {row({0.3, 0.3, 0.3, 0.1}), row({0.05, 0.05, 0.0, 0.9})});
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0].parent, 1);
  EXPECT_EQ(o[0].token, 3);
  EXPECT_EQ(o[1].parent, 0);  // 0.5 * 0.3, lowest id among the three ties
  EXPECT_EQ(o[1].token, 0);
  EXPECT_EQ(bs.beams()[0].tokens, (std::vector<Token>{2, 3}));
  EXPECT_NEAR(bs.beams()[0].logprob, std::log(0.4 * 0.9), 1e-6);
  EXPECT_EQ(bs.beams()[1].tokens, (std::vector<Token>{1, 0}));
}

// Round 1: stop (p .4) -> hypothesis A of one token; beams [0] (.35), [1] (.25). Round 2 (the last): each beam
// stops with p .9: hypotheses B = [0,3] and C = [1,3] of two tokens. Length penalty 1 favours the longer ones.
std::vector<Hypothesis> length_case(float lp) {
  BeamSearch bs({.width = 2, .length_penalty = lp, .max_tokens = 2, .stop_ids = {3}});
  step(bs, {row({0.35, 0.25, 0.0, 0.4})});
  EXPECT_EQ(bs.beams().size(), 2u);
  step(bs, {row({0.05, 0.05, 0.0, 0.9}), row({0.05, 0.05, 0.0, 0.9})});
  EXPECT_TRUE(bs.done());
  return bs.best(5);
}

TEST(BeamSearchLogic, LengthPenaltyScoresHypotheses) {
  const double a = std::log(0.4), b = std::log(0.35 * 0.9), c = std::log(0.25 * 0.9);
  auto h = length_case(1.0f);
  ASSERT_EQ(h.size(), 2u);  // at most width kept: A (-0.92) lost to B (-0.58) and C (-0.75)
  EXPECT_EQ(h[0].tokens, (std::vector<Token>{0, 3}));
  EXPECT_NEAR(h[0].score, b / 2, 1e-6);
  EXPECT_NEAR(h[0].logprob, b, 1e-6);
  EXPECT_TRUE(h[0].stopped);
  EXPECT_EQ(h[1].tokens, (std::vector<Token>{1, 3}));
  EXPECT_NEAR(h[1].score, c / 2, 1e-6);
  h = length_case(0.0f);  // no penalty: the plain sum, the short one wins
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].tokens, (std::vector<Token>{3}));
  EXPECT_NEAR(h[0].score, a, 1e-6);
  EXPECT_EQ(h[1].tokens, (std::vector<Token>{0, 3}));
  EXPECT_NEAR(h[1].score, b, 1e-6);
  ASSERT_EQ(h[1].token_logprobs.size(), 2u);
  EXPECT_NEAR(h[1].token_logprobs[1], std::log(0.9), 1e-6);
}

// Round 1: A = [3] (score log .4 = -0.92); beams [0] (.35), [1] (.25). Round 2: [0,3] (score (log .35 + log .5)/2
// = -0.87) is the second hypothesis, and beam [0,1] (p .48) still scores (log .35 + log .48)/2 = -0.89 > -0.92.
BeamSearch stopping_case(bool early) {
  BeamSearch bs({.width = 2, .early_stopping = early, .max_tokens = 8, .stop_ids = {3}});
  step(bs, {row({0.35, 0.25, 0.0, 0.4})});
  step(bs, {row({0.01, 0.48, 0.01, 0.5}), row({0.3, 0.3, 0.3, 0.1})});
  return bs;
}

TEST(BeamSearchLogic, EarlyStoppingStopsAtWidthHypotheses) {
  const BeamSearch bs = stopping_case(true);
  EXPECT_TRUE(bs.done());
  EXPECT_TRUE(bs.beams().empty());
  const auto h = bs.best(2);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].tokens, (std::vector<Token>{0, 3}));
  EXPECT_EQ(h[1].tokens, (std::vector<Token>{3}));
}

TEST(BeamSearchLogic, HeuristicContinuesWhileALiveBeamCanStillBeatTheWorstHypothesis) {
  BeamSearch bs = stopping_case(false);
  ASSERT_FALSE(bs.done());
  ASSERT_EQ(bs.beams().size(), 2u);
  EXPECT_EQ(bs.beams()[0].tokens, (std::vector<Token>{0, 1}));
  // Round 3: [0,1,3] at p .9 scores (log .35 + log .48 + log .9)/3 = -0.63: it displaces A; then the best live
  // beam ([1,0,0], p .25 * .3 * .4) cannot beat the worst kept hypothesis (B, -0.87) any more.
  step(bs, {row({0.05, 0.05, 0.0, 0.9}), row({0.4, 0.3, 0.2, 0.1})});
  EXPECT_TRUE(bs.done());
  const auto h = bs.best(2);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].tokens, (std::vector<Token>{0, 1, 3}));
  EXPECT_NEAR(h[0].score, (std::log(0.35) + std::log(0.48) + std::log(0.9)) / 3, 1e-6);
  EXPECT_EQ(h[1].tokens, (std::vector<Token>{0, 3}));
}

TEST(BeamSearchLogic, StopsBelowTheTopWidthAreNotHypotheses) {
  // Three stop ids ranked 1st, 2nd and 3rd of one beam: the first two become hypotheses, the third (rank 2 >=
  // width) is dropped as HF drops it; the live beams come from ranks 3 and 4... of which only one exists in the
  // top 2 * width = 4 continuations.
  BeamSearch bs({.width = 2, .max_tokens = 8, .stop_ids = {1, 2, 3}});
  const auto o = step(bs, {row({0.15, 0.2, 0.25, 0.3, 0.1})});
  EXPECT_TRUE(bs.done());  // two hypotheses, and the live beam [0] (.15) cannot beat the worse one (.25)
  EXPECT_TRUE(o.empty());
  const auto h = bs.best(3);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].tokens, (std::vector<Token>{3}));
  EXPECT_EQ(h[1].tokens, (std::vector<Token>{2}));
}

TEST(BeamSearchLogic, MaxTokensTurnsLiveBeamsIntoHypotheses) {
  BeamSearch bs({.width = 3, .max_tokens = 1, .stop_ids = {9}});
  const auto o = step(bs, {row({0.1, 0.2, 0.3, 0.4})});
  EXPECT_TRUE(o.empty());
  EXPECT_TRUE(bs.done());
  const auto h = bs.best(3);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].tokens, (std::vector<Token>{3}));
  EXPECT_EQ(h[1].tokens, (std::vector<Token>{2}));
  EXPECT_EQ(h[2].tokens, (std::vector<Token>{1}));
  EXPECT_FALSE(h[0].stopped);
  EXPECT_NEAR(h[2].score, std::log(0.2), 1e-6);
  EXPECT_THROW(step(bs, {}), Error);  // done
}

TEST(BeamSearchLogic, WidthOneIsGreedy) {
  // A deterministic "model": the row after token t is a hash of (t, position); stop id 0 is never likely.
  const int V = 50;
  auto row_after = [&](Token t, int pos) {
    std::vector<float> r(V);
    for (int i = 0; i < V; ++i) r[size_t(i)] = float(((t * 7919 + pos * 104729 + i * 31337) % 1000) / 100.0);
    r[0] = -50.0f;
    return r;
  };
  BeamSearch bs({.width = 1, .max_tokens = 20, .stop_ids = {0}});
  std::vector<Token> greedy;
  Token last = 1;
  for (int pos = 0; pos < 20; ++pos) {
    const auto r = row_after(last, pos);
    last = Token(std::max_element(r.begin(), r.end()) - r.begin());
    greedy.push_back(last);
  }
  last = 1;
  for (int pos = 0; !bs.done(); ++pos) {
    const auto o = step(bs, {row_after(last, pos)});
    if (!o.empty()) last = o[0].token;
  }
  const auto h = bs.best(1);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].tokens, greedy);
}

TEST(BeamSearchLogic, RejectsBadParams) {
  EXPECT_THROW(BeamSearch({.width = 0}), Error);
  EXPECT_THROW(BeamSearch({.width = 2, .max_tokens = 0}), Error);
  BeamSearch bs({.width = 2, .max_tokens = 4});
  EXPECT_THROW(bs.step({}), Error);  // one list per live beam
}

}  // namespace
}  // namespace tinfer

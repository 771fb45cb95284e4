// NgramDrafter (prompt-lookup drafting) against a brute-force oracle: for every prefix of random token
// streams over small vocabularies (many repeats) and a few (min_n, max_n), the proposal equals "the tokens
// after the most recent earlier occurrence of the longest suffix n-gram, n in [min_n, max_n]", up to k;
// plus the hand-made cases (no match, continuation cut by the end of history, reset, bad n).
#include <gtest/gtest.h>

#include <random>

#include "tinfer/error.h"
#include "engine/decoding/ngram_drafter.h"

namespace tinfer {
namespace {

using Tokens = std::vector<kv::Token>;

Tokens brute(const Tokens& h, int min_n, int max_n, int k) {
  const int64_t len = int64_t(h.size());
  for (int n = max_n; n >= min_n; --n) {
    if (n > len) continue;
    // most recent end e < len with h[e-n, e) == h[len-n, len)
    for (int64_t e = len - 1; e >= n; --e) {
      bool eq = true;
      for (int i = 1; i <= n && eq; ++i) eq = h[size_t(e - i)] == h[size_t(len - i)];
      if (!eq) continue;
      Tokens out;
      for (int64_t i = e; i < len && int64_t(out.size()) < k; ++i) out.push_back(h[size_t(i)]);
      return out;
    }
  }
  return {};
}

TEST(NgramDrafter, MatchesBruteForceOnRandomStreams) {
  const int cfg[][2] = {{1, 1}, {1, 3}, {2, 4}, {3, 3}, {1, 8}};
  for (const auto& c : cfg)
    for (int vocab : {2, 5, 40})
      for (uint32_t seed = 1; seed <= 3; ++seed) {
        std::mt19937 rng(seed * 7919u + uint32_t(vocab));
        std::uniform_int_distribution<int> tok(0, vocab - 1);
        NgramDrafter d(c[0], c[1]);
        Tokens h;
        for (int step = 0; step < 300; ++step) {
          const kv::Token t = tok(rng);
          h.push_back(t);
          d.append(t);
          for (int k : {1, 4, 9}) {
            ASSERT_EQ(d.propose(k), brute(h, c[0], c[1], k))
                << "n=[" << c[0] << "," << c[1] << "] vocab=" << vocab << " seed=" << seed << " len=" << h.size()
                << " k=" << k;
          }
        }
      }
}

TEST(NgramDrafter, CopiesTheContinuationOfARepeatedPassage) {
  NgramDrafter d(1, 3);
  // "10 11 12 13 14 15 | 7 | 10 11 12" -> 13 14 15 7 10 ...
  d.append(Tokens{10, 11, 12, 13, 14, 15, 7, 10, 11, 12});
  EXPECT_EQ(d.match_len(), 3);
  EXPECT_EQ(d.propose(3), (Tokens{13, 14, 15}));
  EXPECT_EQ(d.propose(6), (Tokens{13, 14, 15, 7, 10, 11}));
  EXPECT_EQ(d.propose(100).size(), 7u);  // cut at the end of the history
  EXPECT_TRUE(d.propose(0).empty());
  d.append(99);  // a token never seen: no match
  EXPECT_EQ(d.match_len(), 0);
  EXPECT_TRUE(d.propose(4).empty());
  d.reset();
  EXPECT_EQ(d.size(), 0);
  d.append(Tokens{1, 2, 1});
  EXPECT_EQ(d.propose(2), (Tokens{2, 1}));
}

TEST(NgramDrafter, RejectsBadOrders) {
  EXPECT_THROW(NgramDrafter(0, 2), Error);
  EXPECT_THROW(NgramDrafter(3, 2), Error);
  EXPECT_THROW(NgramDrafter(1, 9), Error);
}

}  // namespace
}  // namespace tinfer

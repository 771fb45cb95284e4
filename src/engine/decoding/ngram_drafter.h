// Prompt-lookup drafting (speculative decoding's `ngram` mode): the continuation of the most recent earlier
// occurrence of the sequence's last n tokens, for the longest n in [min_n, max_n] that occurs, is proposed
// as the next tokens. No second model: it pays off wherever outputs copy their input (summaries, rewrites,
// code edits, quoting) and costs one hash-map probe per n per committed token.
//
// Incremental: append() takes each committed token once (prompt, then accepted outputs) and keeps, per n,
// the latest end position of every n-gram seen, so propose() is O(max_n + k). Drafted tokens are never
// appended (they are not committed), so a rejected draft needs no undo; a sequence that loses tokens
// (preemption recomputes, never rewinds committed ones) is rebuilt with reset().
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "tinfer/kv_types.h"

namespace tinfer {

class NgramDrafter {
 public:
  using Token = kv::Token;
  // 1 <= min_n <= max_n <= 8.
  NgramDrafter(int min_n = 1, int max_n = 3);

  void append(Token t);
  void append(std::span<const Token> ts) {
    for (Token t : ts) append(t);
  }
  void reset() { *this = NgramDrafter(min_n_, max_n_); }
  int64_t size() const { return int64_t(tokens_.size()); }

  // Up to k proposed next tokens (fewer near the end of the history, none without a match).
  std::vector<Token> propose(int k) const;
  // The n of the match propose() uses now (0 = none): for statistics.
  int match_len() const;

 private:
  uint64_t key(int64_t end, int n) const;  // hash of tokens_[end - n, end)
  bool same(int64_t a_end, int64_t b_end, int n) const;
  int min_n_, max_n_;
  std::vector<Token> tokens_;
  std::vector<std::unordered_map<uint64_t, int64_t>> last_end_;  // [n - 1]: n-gram hash -> latest end
  std::vector<int64_t> prev_end_;  // [n - 1]: end of the previous occurrence of the current suffix, or -1
};

}  // namespace tinfer

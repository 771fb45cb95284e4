// Prompt-lookup drafting (see ngram_drafter.h).
#include "engine/decoding/ngram_drafter.h"

#include "tinfer/error.h"

namespace tinfer {

NgramDrafter::NgramDrafter(int min_n, int max_n) : min_n_(min_n), max_n_(max_n) {
  check(min_n >= 1 && min_n <= max_n && max_n <= 8, "ngram drafter: need 1 <= min_n <= max_n <= 8");
  last_end_.resize(size_t(max_n));
  prev_end_.assign(size_t(max_n), -1);
}

uint64_t NgramDrafter::key(int64_t end, int n) const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ uint64_t(n);
  for (int64_t i = end - n; i < end; ++i) {
    h ^= uint64_t(uint32_t(tokens_[size_t(i)])) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  }
  return h;
}

bool NgramDrafter::same(int64_t a_end, int64_t b_end, int n) const {
  for (int i = 1; i <= n; ++i)
    if (tokens_[size_t(a_end - i)] != tokens_[size_t(b_end - i)]) return false;
  return true;
}

void NgramDrafter::append(Token t) {
  tokens_.push_back(t);
  const int64_t end = int64_t(tokens_.size());
  for (int n = 1; n <= max_n_; ++n) {
    prev_end_[size_t(n - 1)] = -1;
    if (n > end) continue;
    auto& m = last_end_[size_t(n - 1)];
    const uint64_t k = key(end, n);
    const auto it = m.find(k);
    if (it != m.end()) {
      // A hash collision keeps the older entry's tokens out: the proposal is checked token by token.
      if (same(it->second, end, n)) prev_end_[size_t(n - 1)] = it->second;
      it->second = end;
    } else {
      m.emplace(k, end);
    }
  }
}

int NgramDrafter::match_len() const {
  for (int n = max_n_; n >= min_n_; --n)
    if (prev_end_[size_t(n - 1)] >= 0) return n;
  return 0;
}

std::vector<NgramDrafter::Token> NgramDrafter::propose(int k) const {
  std::vector<Token> out;
  const int n = match_len();
  if (n == 0 || k <= 0) return out;
  const int64_t from = prev_end_[size_t(n - 1)], len = int64_t(tokens_.size());
  for (int64_t i = from; i < len && int64_t(out.size()) < k; ++i) out.push_back(tokens_[size_t(i)]);
  return out;
}

}  // namespace tinfer

// TokenLengths: a partial sort by length; a query walks the longest tokens until one fits the byte set.
#include "text/tokenizer/token_lengths.h"

#include <algorithm>

namespace tinfer {

TokenLengths::TokenLengths(const std::vector<std::string>& texts) {
  std::vector<size_t> ids(texts.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = i;
  const size_t keep = std::min(kIndexed, ids.size());
  auto longer = [&](size_t a, size_t b) { return texts[a].size() > texts[b].size(); };
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(keep), ids.end(), longer);
  top_.reserve(keep);
  for (size_t i = 0; i < keep; ++i) top_.push_back({texts[ids[i]].size(), bytes_of(texts[ids[i]])});
  if (!top_.empty()) longest_ = std::max(longest_, top_.front().len);
  if (keep < ids.size()) rest_ = std::max(rest_, texts[ids[keep]].size());
}

size_t TokenLengths::longest_within(const ByteSet& bytes) const {
  const ByteSet outside = ~bytes;
  for (const Entry& e : top_) {
    if (e.len <= rest_) break;  // no longer than what is not indexed
    if ((e.bytes & outside).none()) return std::max(e.len, kMinBytes);
  }
  return rest_;
}

TokenLengths::ByteSet TokenLengths::bytes_of(std::string_view s) {
  ByteSet b;
  for (char c : s) b.set(static_cast<unsigned char>(c));
  return b;
}

}  // namespace tinfer

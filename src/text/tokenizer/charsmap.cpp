// CharsMap: the double-array trie walk and the replacement table of SentencePiece's precompiled character map.
// A unit packs (from the trie's format): bit 8 "has a leaf", the label in bits 0-7 (and bit 31 for leaves), the
// offset to the children in bits 10-31 (shifted left by 8 more when bit 9 is set), a leaf's value in bits 0-30.
#include "text/tokenizer/charsmap.h"

#include <cstring>

#include "tinfer/error.h"
#include "text/tokenizer/unicode_util.h"

namespace tinfer {

namespace {

bool has_leaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t leaf_value(uint32_t u) { return u & ((1u << 31) - 1); }
uint32_t label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

}  // namespace

CharsMap::CharsMap(std::string_view blob) {
  check(blob.size() >= 4, "precompiled charsmap: shorter than its 4-byte header");
  uint32_t trie_bytes = 0;
  std::memcpy(&trie_bytes, blob.data(), 4);  // little-endian, as every platform tinfer runs on
  check(trie_bytes % 4 == 0 && trie_bytes >= 4 && size_t(trie_bytes) <= blob.size() - 4,
        "precompiled charsmap: a trie of " + std::to_string(trie_bytes) + " bytes does not fit the " +
            std::to_string(blob.size()) + "-byte map");
  units_.resize(trie_bytes / 4);
  std::memcpy(units_.data(), blob.data() + 4, trie_bytes);
  replacements_.assign(blob.substr(4 + trie_bytes));
  check(replacements_.empty() || replacements_.back() == '\0', "precompiled charsmap: replacements not NUL-terminated");
}

size_t CharsMap::longest_match(std::string_view s, uint32_t& value) const {
  // Real maps' keys are a few characters; a hostile map could match without end, so a walk stops at kMaxKeyBytes.
  constexpr size_t kMaxKeyBytes = 128;
  size_t best = 0;
  size_t pos = offset(units_[0]);
  for (size_t i = 0; i < s.size() && i < kMaxKeyBytes; ++i) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    pos ^= c;
    if (pos >= units_.size()) break;  // (a malformed map: no match)
    const uint32_t u = units_[pos];
    if (label(u) != c) break;
    pos ^= offset(u);
    if (pos >= units_.size()) break;
    if (has_leaf(u)) {
      const uint32_t v = leaf_value(units_[pos]);
      if (v < replacements_.size()) best = i + 1, value = v;
    }
  }
  return best;
}

std::string CharsMap::normalize(std::string_view s) const {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t value = 0;
    const size_t n = longest_match(s.substr(i), value);
    if (n > 0) {
      out += replacements_.c_str() + value;  // up to its NUL
      i += n;
      continue;
    }
    size_t j = i;
    const uint32_t cp = unicode::next_cp(s, j);
    if (cp == 0xFFFD && s.compare(i, 3, "\xEF\xBF\xBD") != 0) out += "\xEF\xBF\xBD";  // an invalid byte
    else out.append(s.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace tinfer

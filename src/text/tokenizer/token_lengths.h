// The longest texts a vocabulary's tokens match, indexed by the bytes they are made of. A token can occur in a text's
// tokenization only if each of its bytes occurs in the text, so the longest such token bounds how many bytes of that
// text one token stands for: for a one-word prompt "aaaa..." a few bytes, where the vocabulary's longest token (a run
// of '=' or of spaces) has 162. What a server uses to know, from a prompt's length alone, that it cannot fit.
#pragma once
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tinfer {

class TokenLengths {
 public:
  using ByteSet = std::bitset<256>;
  static constexpr size_t kMinBytes = 4;    // the floor of every answer: one <unk> stands for a character, <= 4 bytes
  static constexpr size_t kIndexed = 8192;  // tokens kept with their byte sets, the longest first

  // texts[id]: the text token id matches in its kind's input.
  explicit TokenLengths(const std::vector<std::string>& texts);
  size_t longest() const { return longest_; }         // over every token
  size_t longest_within(const ByteSet& bytes) const;  // over the tokens made of these bytes only
  static ByteSet bytes_of(std::string_view s);

 private:
  struct Entry {
    size_t len;
    ByteSet bytes;
  };
  std::vector<Entry> top_;     // the kIndexed longest tokens, longest first
  size_t rest_ = kMinBytes;    // no token outside top_ is longer
  size_t longest_ = kMinBytes;
};

}  // namespace tinfer

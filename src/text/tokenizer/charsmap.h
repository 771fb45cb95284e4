// SentencePiece's precompiled character map (NormalizerSpec.precompiled_charsmap, the GGUF key
// tokenizer.ggml.precompiled_charsmap, tokenizer.json's Precompiled normalizer): the normalisation a unigram model
// was trained with (e.g. nmt_nfkc: NFKC plus whitespace folding), as a byte trie of source strings and their
// replacements. Layout: [u32 trie bytes][trie: a double array of u32 units][replacements, NUL-terminated].
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tinfer {

class CharsMap {
 public:
  // Error naming the problem when the blob is malformed (sizes, a replacement offset past its end).
  explicit CharsMap(std::string_view blob);
  // At each position the longest source string the map holds is replaced; elsewhere one UTF-8 character is copied
  // (an invalid byte becomes U+FFFD, as SentencePiece does).
  std::string normalize(std::string_view s) const;

 private:
  // Length of the longest match at s (0: none) and its replacement's offset.
  size_t longest_match(std::string_view s, uint32_t& value) const;
  std::vector<uint32_t> units_;
  std::string replacements_;
};

}  // namespace tinfer

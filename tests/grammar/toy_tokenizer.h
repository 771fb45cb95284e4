// A toy vocabulary for the grammar tests and the schema fuzzer: ids 0..255 are the single bytes, 256 is a control
// end-of-generation token (no bytes), and a few multi-byte pieces follow -- JSON punctuation, words that are
// prefixes of each other ("ye"/"yes"), a two-byte UTF-8 character, and a piece that ends inside a character. Small
// enough that a test can check the grammar's mask against every token.
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace tinfer::grammar_test {

inline constexpr int32_t kEos = 256;

inline const std::vector<std::string>& toy_pieces() {  // ids 257.. in order
  static const std::vector<std::string> p = {
      "{\"", "\": ", ", ", "true", "false", "null", "name", "yes", "ye", "no", "abc",
      "\xc3\xa9",    // e-acute, a whole two-byte character
      "x\xc3",       // ends inside a character (its lead byte alone)
      "\"}", "\xc3\xa9t\xc3\xa9",
  };
  return p;
}

class ToyTokenizer final : public Tokenizer {
 public:
  ToyTokenizer() {
    for (int b = 0; b < 256; ++b) pieces_.push_back(std::string(1, char(b)));
    pieces_.push_back("</s>");
    for (const std::string& s : toy_pieces()) pieces_.push_back(s);
  }
  // Greedy longest match (the grammar tests feed bytes; encode is for the fuzzer's walk and forced-token checks).
  std::vector<int32_t> encode(std::string_view text, bool, bool = false, std::span<const TextRange> = {}) const override {
    std::vector<int32_t> out;
    for (size_t i = 0; i < text.size();) {
      int32_t best = int32_t(static_cast<unsigned char>(text[i]));
      size_t len = 1;
      for (int32_t id = kEos + 1; id < n_vocab(); ++id) {
        const std::string& p = pieces_[size_t(id)];
        if (p.size() > len && text.substr(i, p.size()) == p) best = id, len = p.size();
      }
      out.push_back(best);
      i += len;
    }
    return out;
  }
  std::string token_bytes(int32_t id, bool render_special = false) const override {
    if (id == kEos) return render_special ? pieces_[size_t(id)] : std::string();
    return pieces_.at(size_t(id));
  }
  int32_t n_vocab() const override { return int32_t(pieces_.size()); }
  int32_t bos() const override { return -1; }
  int32_t eos() const override { return kEos; }
  bool is_eog(int32_t id) const override { return id == kEos; }
  int32_t token_id(std::string_view piece) const override {
    auto it = std::find(pieces_.begin(), pieces_.end(), piece);
    return it == pieces_.end() ? -1 : int32_t(it - pieces_.begin());
  }
  const std::string& piece(int32_t id) const override { return pieces_.at(size_t(id)); }
  bool add_bos_by_default() const override { return false; }

 private:
  std::vector<std::string> pieces_;
};

}  // namespace tinfer::grammar_test

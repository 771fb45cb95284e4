// Shared pieces of the grammar tests: a GrammarCompiler over the toy vocabulary (logits padded past the vocabulary,
// as a model's often are), and the checks they make -- does a grammar take a string byte by byte and then stop, and
// which tokens does a position's mask allow.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_compiler.h"
#include "grammar/toy_tokenizer.h"

namespace tinfer::grammar_test {

using grammar::GrammarCompiler;
using grammar::GrammarError;
using grammar::GrammarKind;
using grammar::GrammarSpec;

inline constexpr int32_t kPad = 5;  // logits ids past the tokenizer's vocabulary: never allowed

inline const ToyTokenizer& toy() {
  static const ToyTokenizer t;
  return t;
}
inline int32_t toy_logits() { return toy().n_vocab() + kPad; }

inline std::unique_ptr<GrammarCompiler> toy_compiler(grammar::GrammarCompilerConfig cfg = {}) {
  return std::make_unique<GrammarCompiler>(toy(), toy_logits(), std::vector<int32_t>{kEos}, cfg);
}

inline int32_t byte_token(char c) { return int32_t(static_cast<unsigned char>(c)); }

// Accepts `text` one byte token at a time; the index of the first byte refused, or -1 when all were taken.
inline int feed_bytes(TokenConstraint& c, std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i)
    if (!c.accept(byte_token(text[i]))) return int(i);
  return -1;
}

// The grammar's language holds `text` exactly: every byte is taken, then the stop token, which ends it.
inline bool matches(const TokenGrammar& g, std::string_view text) {
  auto c = g.start();
  return feed_bytes(*c, text) < 0 && c->accept(kEos) && c->terminated();
}

// The tokens a position allows, as one bool per logits id (fill_mask's "all allowed" answer expanded).
inline std::vector<bool> allowed(TokenConstraint& c) {
  std::vector<uint32_t> mask(mask_words(toy_logits()), 0xdeadbeefu);
  const bool applies = c.fill_mask(mask);
  std::vector<bool> out(static_cast<size_t>(toy_logits()));
  for (size_t t = 0; t < out.size(); ++t) out[t] = !applies || ((mask[t / 32] >> (t % 32)) & 1u);
  return out;
}

inline std::string bytes_of(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += toy().token_bytes(id);
  return s;
}

// A fresh compiler per test (the cache is tested on its own); `compile` throws GrammarError.
class GrammarTest : public ::testing::Test {
 protected:
  std::shared_ptr<const TokenGrammar> compile(GrammarKind k, const std::string& src) {
    return compiler_->compile(GrammarSpec{k, src});
  }
  std::shared_ptr<const TokenGrammar> schema(const std::string& s) { return compile(GrammarKind::kJsonSchema, s); }
  // The GrammarError's message for a spec that must not compile ("" if it compiled).
  std::string error_of(GrammarKind k, const std::string& src) {
    try {
      compile(k, src);
    } catch (const GrammarError& e) {
      return e.what();
    }
    return "";
  }
  std::unique_ptr<GrammarCompiler> compiler_ = toy_compiler();
};

}  // namespace tinfer::grammar_test

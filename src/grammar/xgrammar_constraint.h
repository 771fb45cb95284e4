// The TokenGrammar / TokenConstraint implementations over xgrammar (private to src/grammar: only .cpp files include
// xgrammar's headers).
#pragma once
#include <xgrammar/xgrammar.h>

#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tinfer/token_constraint.h"

namespace tinfer {
class Tokenizer;
}

namespace tinfer::grammar {

// What every grammar of one model shares about its vocabulary: the stop tokens, the token of each single byte
// (jump-forward finds a forced byte by it), and how to write forced text as tokens: the model's own byte-level BPE
// (whose merges the model follows), or for SentencePiece vocabularies (a dummy space prefix) a greedy longest match.
struct VocabView {
  std::vector<int32_t> stop_ids;
  std::array<int32_t, 256> byte_token{};  // -1: no token is that byte alone
  const Tokenizer* tok = nullptr;         // outlives every request, so every grammar
  bool bpe = false;                       // tok encodes forced text as the model would write it
  std::unordered_map<std::string, int32_t> pieces;  // !bpe: token bytes -> id, for the longest match
  size_t max_piece = 0;
  int32_t n_vocab = 0;
};
std::shared_ptr<const VocabView> make_vocab_view(const Tokenizer& tok, int32_t n_vocab, std::vector<int32_t> stop_ids);

class XgGrammar final : public TokenGrammar {
 public:
  XgGrammar(xgrammar::CompiledGrammar g, std::shared_ptr<const VocabView> vocab)
      : g_(std::move(g)), vocab_(std::move(vocab)) {}
  std::unique_ptr<TokenConstraint> start() const override;
  int64_t bytes() const { return int64_t(g_.MemorySizeBytes()); }
  // False when the start allows no token, not even a stop token: the grammar's language is empty (an enum of
  // nothing, a character class of no character). xgrammar compiles these; a request could never end in one.
  // n_vocab: the mask width (the logits').
  bool admits_output(int32_t n_vocab) const;

 private:
  xgrammar::CompiledGrammar g_;
  std::shared_ptr<const VocabView> vocab_;  // shared with every constraint made from it
};

}  // namespace tinfer::grammar

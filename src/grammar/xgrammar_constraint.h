// The TokenGrammar / TokenConstraint implementations over xgrammar (private to src/grammar: only .cpp files include
// xgrammar's headers).
#pragma once
#include <xgrammar/xgrammar.h>

#include <memory>
#include <vector>

#include "tinfer/token_constraint.h"

namespace tinfer {
class Tokenizer;
}

namespace tinfer::grammar {

class XgGrammar final : public TokenGrammar {
 public:
  // tok: the model's tokenizer (outlives every request, so every grammar), which tokenizes forced text.
  XgGrammar(xgrammar::CompiledGrammar g, std::shared_ptr<const std::vector<int32_t>> stop_ids, const Tokenizer* tok)
      : g_(std::move(g)), stop_ids_(std::move(stop_ids)), tok_(tok) {}
  std::unique_ptr<TokenConstraint> start() const override;
  int64_t bytes() const { return int64_t(g_.MemorySizeBytes()); }
  // False when the start allows no token, not even a stop token: the grammar's language is empty (an enum of
  // nothing, a character class of no character). xgrammar compiles these; a request could never end in one.
  // n_vocab: the mask width (the logits').
  bool admits_output(int32_t n_vocab) const;

 private:
  xgrammar::CompiledGrammar g_;
  std::shared_ptr<const std::vector<int32_t>> stop_ids_;  // shared with every constraint made from it
  const Tokenizer* tok_;
};

}  // namespace tinfer::grammar

// The TokenGrammar / TokenConstraint implementations over xgrammar (private to src/grammar: only .cpp files include
// xgrammar's headers).
#pragma once
#include <xgrammar/xgrammar.h>

#include <memory>
#include <vector>

#include "tinfer/token_constraint.h"

namespace tinfer::grammar {

class XgGrammar final : public TokenGrammar {
 public:
  XgGrammar(xgrammar::CompiledGrammar g, std::shared_ptr<const std::vector<int32_t>> stop_ids)
      : g_(std::move(g)), stop_ids_(std::move(stop_ids)) {}
  std::unique_ptr<TokenConstraint> start() const override;
  int64_t bytes() const { return int64_t(g_.MemorySizeBytes()); }
  // True when no token (not even a stop token) may come first: the grammar's language is empty.
  bool admits_nothing(int32_t n_vocab) const;

 private:
  xgrammar::CompiledGrammar g_;
  std::shared_ptr<const std::vector<int32_t>> stop_ids_;  // shared with every constraint made from it
};

}  // namespace tinfer::grammar

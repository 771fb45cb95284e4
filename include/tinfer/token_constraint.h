// The seam for structured output: a grammar that constrains which token a sequence may sample next. The engine knows
// only these two interfaces; src/grammar implements them with xgrammar (compiled once per distinct schema, off the
// step loop), and a request carries its compiled grammar (GenerationRequest::grammar).
//
// Mask shape: ceil(n_vocab / 32) words; bit (t % 32) of word t / 32 set = token t allowed (xgrammar's layout).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace tinfer {

// One sequence's position in a grammar. Not thread-safe: the stepping thread owns it.
class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Writes the tokens allowed next into `mask` (mask_words(n_vocab) words). Returns false when every token is
  // allowed, so the mask need not be applied (its contents are then unspecified).
  virtual bool fill_mask(std::span<uint32_t> mask) = 0;
  // Advances over a committed token. False (state unchanged) when the grammar does not allow it here.
  virtual bool accept(int32_t token) = 0;
  virtual void rollback(int tokens) = 0;  // undoes the last `tokens` accepts
  virtual bool terminated() const = 0;    // a stop token was accepted at the grammar's end
  // Tokens the grammar forces next (its only continuation, greedily tokenized), or empty. Does not advance.
  virtual std::vector<int32_t> forced_tokens() const = 0;
  virtual std::unique_ptr<TokenConstraint> fork() const = 0;  // an independent copy of this position
};

// A compiled grammar, shared (read-only) by every sequence that follows it.
class TokenGrammar {
 public:
  virtual ~TokenGrammar() = default;
  virtual std::unique_ptr<TokenConstraint> start() const = 0;  // a fresh position at the grammar's start
};

inline size_t mask_words(int32_t n_vocab) { return (size_t(n_vocab) + 31) / 32; }

}  // namespace tinfer

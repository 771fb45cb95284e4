// GrammarCompiler: GrammarSpec -> TokenGrammar over one model's vocabulary, with a cache bounded in bytes (least
// recently used first out) so a schema compiles once however many requests use it. Thread-safe: the server's
// request threads compile concurrently, off the engine's step loop; a request waits for its own compile only, and
// two requests asking for the same grammar at once share one compile. xgrammar stays behind this header.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_spec.h"
#include "tinfer/error.h"
#include "tinfer/token_constraint.h"

namespace tinfer {
class Tokenizer;
}

namespace tinfer::grammar {

// A grammar that cannot be compiled (invalid schema / regex / EBNF, an unsupported feature): the message names it.
class GrammarError : public Error {
 public:
  using Error::Error;
};

struct GrammarStats {
  uint64_t compiles = 0;         // grammars compiled (cache misses that succeeded)
  uint64_t failures = 0;         // specs refused
  uint64_t cache_hits = 0;
  double compile_seconds = 0.0;  // total wall time in successful compiles
  int64_t cache_bytes = 0;       // held by cached grammars now
  uint64_t cached = 0;           // grammars in the cache now
};

struct GrammarCompilerConfig {
  int64_t cache_bytes = int64_t(512) << 20;  // bound on the cached compiled grammars
  int threads = 2;                           // xgrammar's compile threads (token-mask cache build)
};

class GrammarCompiler {
 public:
  // n_vocab: the model's logits width (at least the tokenizer's); stop_ids: the tokens that end a completed
  // grammar (the model's end-of-generation ids).
  GrammarCompiler(const Tokenizer& tok, int32_t n_vocab, std::vector<int32_t> stop_ids,
                  GrammarCompilerConfig cfg = {});
  ~GrammarCompiler();
  GrammarCompiler(const GrammarCompiler&) = delete;
  GrammarCompiler& operator=(const GrammarCompiler&) = delete;

  // The compiled grammar (cached). Throws GrammarError for a spec that does not compile.
  std::shared_ptr<const TokenGrammar> compile(const GrammarSpec& spec);
  GrammarStats stats() const;
  int32_t n_vocab() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tinfer::grammar

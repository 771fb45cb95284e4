// libFuzzer target: arbitrary bytes as a grammar source through GrammarCompiler over the toy vocabulary of the
// grammar tests, then a short walk of the compiled grammar (masks, accepts of allowed and refused tokens, a fork, a
// rollback, forced tokens). The first byte picks the kind (mostly JSON Schema; regex, EBNF, choice, structural tag);
// the rest is the source. A GrammarError is the only outcome allowed besides success; anything else aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "grammar/grammar_compiler.h"
#include "grammar/toy_tokenizer.h"

namespace {

using namespace tinfer;
using grammar::GrammarKind;

constexpr GrammarKind kKinds[] = {GrammarKind::kJsonSchema, GrammarKind::kJsonSchema, GrammarKind::kJsonSchema,
                                  GrammarKind::kRegex,      GrammarKind::kEbnf,       GrammarKind::kChoice,
                                  GrammarKind::kStructuralTag, GrammarKind::kJsonObject};

grammar::GrammarCompiler& compiler() {
  static const grammar_test::ToyTokenizer tok;
  static grammar::GrammarCompiler c = [] {
    grammar::GrammarCompilerConfig cfg;
    cfg.cache_bytes = int64_t(4) << 20;  // small: evictions happen
    cfg.threads = 1;
    return grammar::GrammarCompiler(tok, tok.n_vocab() + 3, {grammar_test::kEos}, cfg);
  }();
  return c;
}

// Walks up to 24 steps, choosing among the allowed tokens with `seed`; checks the seam's promises on the way.
void walk(const TokenGrammar& g, uint32_t seed) {
  const int32_t n = compiler().n_vocab();
  std::vector<uint32_t> mask(mask_words(n));
  auto pos = g.start();
  for (int step = 0; step < 24 && !pos->terminated(); ++step) {
    seed = seed * 1664525u + 1013904223u;
    const bool applies = pos->fill_mask(mask);
    std::vector<int32_t> ok;
    for (int32_t t = 0; t < n; ++t)
      if (!applies || ((mask[size_t(t) / 32] >> (t % 32)) & 1u)) ok.push_back(t);
    if (ok.empty()) std::abort();  // fill_mask promises at least a stop token
    if (applies) {
      for (int32_t t = 0; t < n; t += 37)  // a refused token must leave the position as it was
        if (!((mask[size_t(t) / 32] >> (t % 32)) & 1u) && pos->accept(t) && !pos->terminated()) std::abort();
    }
    (void)pos->forced_tokens();
    auto side = pos->fork();
    (void)side->accept(ok[seed % ok.size()]);
    if (!pos->accept(ok[(seed >> 8) % ok.size()])) continue;
    if (step % 5 == 4) pos->rollback(2);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const GrammarKind kind = kKinds[data[0] % (sizeof kKinds / sizeof kKinds[0])];
  const grammar::GrammarSpec spec{kind, std::string(reinterpret_cast<const char*>(data) + 1, size - 1)};
  std::shared_ptr<const TokenGrammar> g;
  try {
    g = compiler().compile(spec);
  } catch (const grammar::GrammarError&) {
    return 0;
  }
  walk(*g, uint32_t(size) * 2654435761u);
  return 0;
}

// XgConstraint: one sequence's GrammarMatcher. xgrammar reports internal errors as exceptions; none may reach the
// engine's step loop, so a matcher that throws is marked broken and from then on allows only the stop tokens (the
// sequence ends at its next sample) -- one request loses its constraint's tail, every other request goes on.
#include "grammar/xgrammar_constraint.h"

#include <dlpack/dlpack.h>

#include <algorithm>

#include "text/tokenizer/tokenizer.h"
#include <cstdio>
#include <stdexcept>

namespace tinfer::grammar {
namespace {

// xgrammar's FillNextTokenBitmask over a span of mask words; false when every token is allowed.
bool fill_bitmask(xgrammar::GrammarMatcher& m, std::span<uint32_t> mask) {
  int64_t shape = int64_t(mask.size());
  DLTensor t{};
  t.data = mask.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = xgrammar::GetBitmaskDLType();
  t.shape = &shape;
  return m.FillNextTokenBitmask(&t);
}

bool none_set(std::span<const uint32_t> mask) {
  return std::all_of(mask.begin(), mask.end(), [](uint32_t w) { return w == 0; });
}

class XgConstraint final : public TokenConstraint {
 public:
  XgConstraint(xgrammar::GrammarMatcher m, std::shared_ptr<const std::vector<int32_t>> stop_ids, const Tokenizer* tok)
      : m_(std::move(m)), stop_ids_(std::move(stop_ids)), tok_(tok) {}

  bool fill_mask(std::span<uint32_t> mask) override {
    // Past the stop token (a speculative verify row beyond it) xgrammar throws; answer "stop again" instead, so
    // the position stays whole and a rollback of the stop token resumes it.
    if (!broken_ && !m_.IsTerminated()) {
      try {
        if (!fill_bitmask(m_, mask)) return false;
        // A dead end (a subschema that admits nothing, e.g. an impossible pattern): no token at all, not even a
        // stop, would leave the sampler nothing to pick. End the sequence instead.
        if (!none_set(mask)) return true;
        mark_broken("fill_mask", std::runtime_error("no token is allowed here (the grammar has a dead end)"));
      } catch (const std::exception& e) {
        mark_broken("fill_mask", e);
      }
    }
    return only_stops(mask);
  }

  bool accept(int32_t token) override {
    if (broken_) return true;
    try {
      const bool ok = m_.AcceptToken(token);
      if (ok) ++accepted_;
      return ok;
    } catch (const std::exception& e) {
      mark_broken("accept", e);
      return true;
    }
  }

  void rollback(int tokens) override {
    if (broken_ || tokens <= 0) return;
    try {
      m_.Rollback(std::min(tokens, accepted_));
      accepted_ -= std::min(tokens, accepted_);
    } catch (const std::exception& e) {
      mark_broken("rollback", e);
    }
  }

  bool terminated() const override { return broken_ || m_.IsTerminated(); }

  // The forced text as the model's own tokenizer writes it (a byte-level BPE's merges, which the model follows far
  // more often than xgrammar's greedy longest match), less its last token (the free text after it may merge with
  // it), cut where the grammar stops accepting. SentencePiece tokenizers (a dummy space prefix) use xgrammar's.
  std::vector<int32_t> forced_tokens() const override {
    if (broken_) return {};
    try {
      if (!tok_ || tok_->adds_space_prefix()) return m_.FindJumpForwardTokens();
      const std::string s = m_.FindJumpForwardString();
      if (s.empty()) return {};
      std::vector<int32_t> ids = tok_->encode(s, false, false);
      if (ids.size() > 1) ids.pop_back();
      xgrammar::GrammarMatcher probe = m_.Fork();
      size_t n = 0;
      while (n < ids.size() && probe.AcceptToken(ids[n])) ++n;
      ids.resize(n);
      return ids;
    } catch (const std::exception&) {
      return {};
    }
  }

  std::unique_ptr<TokenConstraint> fork() const override {
    auto c = std::make_unique<XgConstraint>(m_.Fork(), stop_ids_, tok_);
    c->broken_ = broken_;
    c->accepted_ = accepted_;
    return c;
  }

 private:
  void mark_broken(const char* op, const std::exception& e) {
    std::fprintf(stderr, "tinfer grammar: matcher %s failed (%s); the sequence may only stop now\n", op, e.what());
    broken_ = true;
  }

  bool only_stops(std::span<uint32_t> mask) const {
    std::fill(mask.begin(), mask.end(), 0u);
    for (int32_t s : *stop_ids_)
      if (size_t(s) / 32 < mask.size()) mask[size_t(s) / 32] |= 1u << (s % 32);
    return true;
  }

  mutable xgrammar::GrammarMatcher m_;  // (FindJumpForwardString is not const but changes no state)
  std::shared_ptr<const std::vector<int32_t>> stop_ids_;  // allowed alone once broken
  const Tokenizer* tok_;
  int accepted_ = 0;
  bool broken_ = false;
};

}  // namespace

bool XgGrammar::admits_output(int32_t n_vocab) const {
  xgrammar::GrammarMatcher m(g_);
  std::vector<uint32_t> mask(mask_words(n_vocab));
  return !fill_bitmask(m, mask) || !none_set(mask);
}

std::unique_ptr<TokenConstraint> XgGrammar::start() const {
  return std::make_unique<XgConstraint>(xgrammar::GrammarMatcher(g_), stop_ids_, tok_);
}

}  // namespace tinfer::grammar

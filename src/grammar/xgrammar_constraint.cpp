// XgConstraint: one sequence's GrammarMatcher. xgrammar reports internal errors as exceptions; none may reach the
// engine's step loop, so a matcher that throws is marked broken and from then on allows only the stop tokens (the
// sequence ends at its next sample) -- one request loses its constraint's tail, every other request goes on.
#include "grammar/xgrammar_constraint.h"

#include <dlpack/dlpack.h>

#include <algorithm>
#include <cstdio>

namespace tinfer::grammar {
namespace {

class XgConstraint final : public TokenConstraint {
 public:
  XgConstraint(xgrammar::GrammarMatcher m, std::shared_ptr<const std::vector<int32_t>> stop_ids)
      : m_(std::move(m)), stop_ids_(std::move(stop_ids)) {}

  bool fill_mask(std::span<uint32_t> mask) override {
    if (!broken_) {
      try {
        int64_t shape = int64_t(mask.size());
        DLTensor t{};
        t.data = mask.data();
        t.device = DLDevice{kDLCPU, 0};
        t.ndim = 1;
        t.dtype = xgrammar::GetBitmaskDLType();
        t.shape = &shape;
        if (!m_.FillNextTokenBitmask(&t)) return false;
        // No token at all (a grammar whose language is empty from here, e.g. root ::= root "a"): an all-zero
        // mask would leave every logit at -inf and the sampler would pick token 0 ("!" on Qwen2.5), outside the
        // grammar. End the sequence instead.
        if (std::any_of(mask.begin(), mask.end(), [](uint32_t w) { return w != 0; })) return true;
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

  std::vector<int32_t> forced_tokens() const override {
    if (broken_) return {};
    try {
      return m_.FindJumpForwardTokens();
    } catch (const std::exception&) {
      return {};
    }
  }

  std::unique_ptr<TokenConstraint> fork() const override {
    auto c = std::make_unique<XgConstraint>(m_.Fork(), stop_ids_);
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

  xgrammar::GrammarMatcher m_;
  std::shared_ptr<const std::vector<int32_t>> stop_ids_;  // allowed alone once broken
  int accepted_ = 0;
  bool broken_ = false;
};

}  // namespace

std::unique_ptr<TokenConstraint> XgGrammar::start() const {
  return std::make_unique<XgConstraint>(xgrammar::GrammarMatcher(g_), stop_ids_);
}

bool XgGrammar::admits_nothing(int32_t n_vocab) const {
  xgrammar::GrammarMatcher m(g_);
  std::vector<uint32_t> mask(mask_words(n_vocab));
  int64_t shape = int64_t(mask.size());
  DLTensor t{};
  t.data = mask.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = xgrammar::GetBitmaskDLType();
  t.shape = &shape;
  return m.FillNextTokenBitmask(&t) && std::all_of(mask.begin(), mask.end(), [](uint32_t w) { return w == 0; });
}

}  // namespace tinfer::grammar

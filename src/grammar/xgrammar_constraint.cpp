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
  XgConstraint(xgrammar::GrammarMatcher m, std::shared_ptr<const VocabView> vocab)
      : m_(std::move(m)), vocab_(std::move(vocab)) {}

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

  // Jump-forward. The forced text is found byte by byte from masks (a byte is forced when its single-byte token is
  // the only one allowed among them and no stop token is), at most kMaxForcedBytes: xgrammar's own
  // FindJumpForwardString never returns on a grammar with no finite output (root ::= "a" root), growing without
  // bound. The text is then written as the model would (its BPE, markers such as Qwen's <tool_call> as their own
  // tokens -- spelled in pieces, the model does not see a call close; a longest match for SentencePiece), less its last
  // token (the free text after it may merge with it), and cut where the grammar stops accepting. One mask fill per
  // call when nothing is forced.
  std::vector<int32_t> forced_tokens() const override {
    if (broken_ || m_.IsTerminated()) return {};
    try {
      const std::string s = forced_text();
      if (s.empty()) return {};
      std::vector<int32_t> ids = vocab_->bpe ? vocab_->tok->encode(s, false, /*parse_special=*/true) : longest_match(s);
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
    auto c = std::make_unique<XgConstraint>(m_.Fork(), vocab_);
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
    for (int32_t s : vocab_->stop_ids)
      if (size_t(s) / 32 < mask.size()) mask[size_t(s) / 32] |= 1u << (s % 32);
    return true;
  }

  mutable xgrammar::GrammarMatcher m_;  // (FindJumpForwardString is not const but changes no state)
  static constexpr size_t kMaxForcedBytes = 64;

  // The byte `m` forces next, if one is.
  bool forced_byte(xgrammar::GrammarMatcher& m, uint8_t* byte) const {
    if (!fill_bitmask(m, scratch_)) return false;  // everything allowed
    auto allowed = [&](int32_t t) { return t >= 0 && ((scratch_[size_t(t) / 32] >> (t % 32)) & 1u); };
    for (int32_t s : vocab_->stop_ids)
      if (allowed(s)) return false;
    int found = -1;
    for (int b = 0; b < 256; ++b) {
      if (!allowed(vocab_->byte_token[size_t(b)])) continue;
      if (found >= 0) return false;
      found = b;
    }
    if (found < 0) return false;
    *byte = uint8_t(found);
    return true;
  }

  std::string forced_text() const {
    scratch_.resize(mask_words(vocab_->n_vocab));
    uint8_t b = 0;
    if (!forced_byte(m_, &b)) return "";
    std::string s(1, char(b));
    xgrammar::GrammarMatcher probe = m_.Fork();
    while (s.size() < kMaxForcedBytes && probe.AcceptToken(vocab_->byte_token[b]) && !probe.IsCompleted() &&
           forced_byte(probe, &b))
      s += char(b);
    return s;
  }

  // SentencePiece vocabularies: the longest piece at each position (what xgrammar's own jump-forward does).
  std::vector<int32_t> longest_match(const std::string& s) const {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < s.size();) {
      size_t len = std::min(vocab_->max_piece, s.size() - i);
      for (; len > 0; --len) {
        auto it = vocab_->pieces.find(s.substr(i, len));
        if (it == vocab_->pieces.end()) continue;
        ids.push_back(it->second);
        break;
      }
      if (len == 0) break;
      i += len;
    }
    return ids;
  }

  std::shared_ptr<const VocabView> vocab_;  // stop ids (allowed alone once broken), byte tokens, the tokenizer
  mutable std::vector<uint32_t> scratch_;   // forced_byte's mask
  int accepted_ = 0;
  bool broken_ = false;
};

}  // namespace

std::shared_ptr<const VocabView> make_vocab_view(const Tokenizer& tok, int32_t n_vocab, std::vector<int32_t> stop_ids) {
  auto v = std::make_shared<VocabView>();
  v->stop_ids = std::move(stop_ids);
  v->byte_token.fill(-1);
  v->tok = &tok;
  v->bpe = !tok.adds_space_prefix();
  v->n_vocab = n_vocab;
  const int32_t nt = std::min(n_vocab, tok.n_vocab());
  for (int32_t t = 0; t < nt; ++t) {
    if (std::find(v->stop_ids.begin(), v->stop_ids.end(), t) != v->stop_ids.end()) continue;
    const std::string b = tok.token_bytes(t);
    if (b.size() == 1 && v->byte_token[uint8_t(b[0])] < 0) v->byte_token[uint8_t(b[0])] = t;
    if (!v->bpe && !b.empty()) {
      v->pieces.emplace(b, t);
      v->max_piece = std::max(v->max_piece, b.size());
    }
  }
  return v;
}

bool XgGrammar::admits_output(int32_t n_vocab) const {
  xgrammar::GrammarMatcher m(g_);
  std::vector<uint32_t> mask(mask_words(n_vocab));
  return !fill_bitmask(m, mask) || !none_set(mask);
}

std::unique_ptr<TokenConstraint> XgGrammar::start() const {
  return std::make_unique<XgConstraint>(xgrammar::GrammarMatcher(g_), vocab_);
}

}  // namespace tinfer::grammar

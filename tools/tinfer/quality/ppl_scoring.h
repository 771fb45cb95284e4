// The perplexity machinery shared by `tinfer ppl` and `tinfer quantize --eval`: the scored token
// sequence, each window's logits (fast path or reference), and the comparison report (human lines and
// the JSON keys `tinfer ppl --json` prints). The statistics themselves are in quality_stats.h.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tinfer/kv_precision.h"
#include "engine/session.h"
#include "quality/quality_stats.h"

namespace tinfer {
class Backend;
class ReferenceForward;
class Tokenizer;
}  // namespace tinfer

namespace tinfer::cli {

// The file's bytes, at most max_bytes of them (0 = all); Error "cannot read 'PATH'".
std::string read_text_file(const std::string& path, long long max_bytes = 0);
// BOS (when the tokenizer has one) + the encoded text, cut to at most max_tokens targets (0 = all);
// Error if that leaves no target.
std::vector<int32_t> scoring_sequence(const Tokenizer& tok, const std::string& text, int64_t max_tokens);

// Feeds windows of a sequence through one model and returns the logits of each window's scored targets.
class WindowLogits {
 public:
  // ref: score with the reference forward pass instead of the backend (the backend still sizes nothing). chunk:
  // tokens per forward of the fast path; 1 is teacher-forced decode, what early exit needs (only a sequence's
  // lone row may exit, so whole-window prefill would measure nothing of it).
  WindowLogits(Backend& backend, int64_t ctx, const KvPrecision& kv_precision, const ReferenceForward* ref = nullptr,
               int64_t chunk = 512);
  // [w.end - w.first_target][n_vocab]: row i holds the logits predicting token w.first_target + i.
  const std::vector<float>& score(const std::vector<int32_t>& seq, const ScoreWindow& w);
  int64_t n_vocab() const { return n_vocab_; }

 private:
  Session session_;
  const ReferenceForward* ref_;
  int64_t n_vocab_;
  std::vector<float> logits_;
  int64_t chunk_;  // tokens per forward
};

// "PPL base ... / PPL <this_name> ... / ΔPPL / KLD / same top token / Δp of target" lines on stdout.
void print_quality_lines(const QualitySummary& s, const std::string& this_name = "this");
// The comparison as `tinfer ppl --kld-base --json` prints it (nll, ppl, tokens, ctx, stride, dppl, kld_*, top1, ...).
nlohmann::json quality_json(const QualitySummary& s, int64_t ctx, int64_t stride);

}  // namespace tinfer::cli

// Shared perplexity machinery (tinfer ppl, tinfer quantize --eval).
#include "quality/ppl_scoring.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "tinfer/error.h"
#include "backend/cpu/reference_forward.h"
#include "text/tokenizer/tokenizer.h"

namespace tinfer::cli {

std::string read_text_file(const std::string& path, long long max_bytes) {
  std::ifstream in(path, std::ios::binary);
  check(bool(in), "cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (max_bytes > 0 && text.size() > size_t(max_bytes)) text.resize(size_t(max_bytes));
  return text;
}

std::vector<int32_t> scoring_sequence(const Tokenizer& tok, const std::string& text, int64_t max_tokens) {
  std::vector<int32_t> seq;
  if (tok.bos() >= 0) seq.push_back(tok.bos());
  for (int32_t t : tok.encode(text, false)) seq.push_back(t);
  if (max_tokens > 0 && int64_t(seq.size()) > max_tokens + 1) seq.resize(size_t(max_tokens + 1));
  check(seq.size() >= 2, "the text encodes to fewer than one target token");
  return seq;
}

WindowLogits::WindowLogits(Backend& backend, int64_t ctx, const KvPrecision& kv_precision, const ReferenceForward* ref,
                           int64_t chunk)
    : session_(backend, ctx, kv_precision),
      ref_(ref),
      n_vocab_(backend.config().n_vocab),
      chunk_(chunk) {}

const std::vector<float>& WindowLogits::score(const std::vector<int32_t>& seq, const ScoreWindow& w) {
  std::vector<int32_t> window(seq.begin() + w.begin, seq.begin() + w.end);
  if (w.first_token >= 0) window[0] = w.first_token;
  const int64_t first_row = w.first_target - 1 - w.begin;  // the row predicting first_target
  if (ref_) {
    std::vector<int64_t> want;
    for (int64_t r = first_row; r + 1 < int64_t(window.size()); ++r) want.push_back(r);
    logits_.clear();
    for (const auto& row : ref_->logits(window, want)) logits_.insert(logits_.end(), row.begin(), row.end());
  } else {
    session_.reset();
    session_.feed_all_logits(window, logits_, chunk_);
    logits_.erase(logits_.begin(), logits_.begin() + first_row * n_vocab_);
  }
  return logits_;
}

void print_quality_lines(const QualitySummary& s, const std::string& this_name) {
  std::string label = "PPL " + this_name;
  if (label.size() < 15) label.resize(15, ' ');
  std::printf("PPL base       %.4f ± %.4f\n", s.ppl_base, s.ppl_base_se);
  std::printf("%s%.4f ± %.4f\n", label.c_str(), s.ppl_this, s.ppl_this_se);
  std::printf("ΔPPL           %+.5f ± %.5f   (ln(PPL ratio) %+.6f ± %.6f)\n", s.dppl, s.dppl_se, s.ln_ratio,
              s.ln_ratio_se);
  std::printf("KLD            mean %.4g ± %.2g, median %.4g, P90 %.4g, P99 %.4g, max %.4g nats\n", s.kl_mean, s.kl_se,
              s.kl_median, s.kl_p90, s.kl_p99, s.kl_max);
  std::printf("same top token %.3f ± %.3f %%\n", 100 * s.top1, 100 * s.top1_se);
  std::printf("Δp of target   mean %+.6f, RMS %.6f, max |Δp| %.6f\n", s.dp_mean, s.dp_rms, s.dp_max_abs);
}

nlohmann::json quality_json(const QualitySummary& s, int64_t ctx, int64_t stride) {
  return {{"nll", s.nll_this},
          {"ppl", s.ppl_this},
          {"tokens", s.n},
          {"ctx", ctx},
          {"stride", stride},
          {"nll_base", s.nll_base},
          {"ppl_base", s.ppl_base},
          {"ppl_base_se", s.ppl_base_se},
          {"ppl_se", s.ppl_this_se},
          {"dppl", s.dppl},
          {"dppl_se", s.dppl_se},
          {"ln_ratio", s.ln_ratio},
          {"ln_ratio_se", s.ln_ratio_se},
          {"kld_mean", s.kl_mean},
          {"kld_se", s.kl_se},
          {"kld_median", s.kl_median},
          {"kld_p90", s.kl_p90},
          {"kld_p99", s.kl_p99},
          {"kld_max", s.kl_max},
          {"top1", s.top1},
          {"top1_se", s.top1_se},
          {"dp_mean", s.dp_mean},
          {"dp_rms", s.dp_rms},
          {"dp_max_abs", s.dp_max_abs}};
}

}  // namespace tinfer::cli

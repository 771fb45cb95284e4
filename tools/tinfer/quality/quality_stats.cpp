// Quality statistics of `tinfer ppl --kld-base`; see quality_stats.h.
#include "quality/quality_stats.h"

#include <algorithm>
#include <cmath>

#include "tinfer/error.h"

namespace tinfer::cli {

std::vector<ScoreWindow> score_windows(int64_t n, int64_t ctx, int64_t stride) {
  check(n >= 2, "fewer than one target token to score");
  check(ctx >= 2 && stride >= 1 && stride <= ctx - 1,
        "--stride must be in [1, ctx-1] = [1, " + std::to_string(ctx - 1) + "]");
  std::vector<ScoreWindow> w;
  int64_t prev_end = 1;  // targets start at token 1
  for (int64_t begin = 0;; begin += stride) {
    const int64_t end = std::min(n, begin + ctx);
    w.push_back({begin, end, std::max(prev_end, begin + 1)});
    if (end == n) break;
    prev_end = end;
  }
  return w;
}

std::vector<ScoreWindow> llama_chunk_windows(int64_t n, int64_t ctx, int32_t bos) {
  check(ctx >= 4, "--ctx must be at least 4 with --llama-chunks");
  check(n >= ctx, "--llama-chunks needs at least one whole window of --ctx " + std::to_string(ctx) + " tokens, the text has " +
                      std::to_string(n));
  std::vector<ScoreWindow> w;
  for (int64_t begin = 0; begin + ctx <= n; begin += ctx) w.push_back({begin, begin + ctx, begin + ctx / 2 + 1, bos});
  return w;
}

int32_t log_softmax(const float* logits, int64_t n, double* out) {
  int64_t arg = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[arg]) arg = i;
  const double mx = logits[arg];
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - mx);
  const double lse = mx + std::log(sum);
  for (int64_t i = 0; i < n; ++i) out[i] = double(logits[i]) - lse;
  return int32_t(arg);
}

double kl_divergence(const double* lp, const double* lq, int64_t n) {
  double kl = 0;
  for (int64_t i = 0; i < n; ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(kl, 0.0);  // rounding can leave -1e-17 for identical rows
}

double percentile_sorted(const std::vector<double>& sorted, double q) {
  check(!sorted.empty(), "percentile of an empty set");
  const double r = q / 100.0 * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(r)), hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (r - double(lo)) * (sorted[hi] - sorted[lo]);
}

void QualityAccumulator::add(double nll_base, double nll_this, double kl, bool same_top) {
  nll_base_.push_back(nll_base);
  nll_this_.push_back(nll_this);
  kl_.push_back(kl);
  same_top_ += same_top;
}

namespace {
double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}
// Sample covariance (n-1) of two equally long series with means ma, mb.
double cov_of(const std::vector<double>& a, double ma, const std::vector<double>& b, double mb) {
  if (a.size() < 2) return 0;
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - ma) * (b[i] - mb);
  return s / double(a.size() - 1);
}
}  // namespace

QualitySummary QualityAccumulator::summarize() const {
  check(!kl_.empty(), "no positions to summarize");
  QualitySummary s;
  s.n = int64_t(kl_.size());
  const double n = double(s.n);
  s.nll_base = mean_of(nll_base_);
  s.nll_this = mean_of(nll_this_);
  const double vb = cov_of(nll_base_, s.nll_base, nll_base_, s.nll_base) / n;  // variances of the means
  const double vt = cov_of(nll_this_, s.nll_this, nll_this_, s.nll_this) / n;
  const double cbt = cov_of(nll_base_, s.nll_base, nll_this_, s.nll_this) / n;
  s.ppl_base = std::exp(s.nll_base);
  s.ppl_this = std::exp(s.nll_this);
  s.ppl_base_se = s.ppl_base * std::sqrt(vb);
  s.ppl_this_se = s.ppl_this * std::sqrt(vt);
  // Delta method on f(mb, mt) = exp(mt) - exp(mb): var = e^2mt vt + e^2mb vb - 2 e^(mt+mb) cov.
  s.dppl = s.ppl_this - s.ppl_base;
  s.dppl_se = std::sqrt(
      std::max(0.0, s.ppl_this * s.ppl_this * vt + s.ppl_base * s.ppl_base * vb - 2 * s.ppl_this * s.ppl_base * cbt));
  s.ln_ratio = s.nll_this - s.nll_base;
  s.ln_ratio_se = std::sqrt(std::max(0.0, vt + vb - 2 * cbt));

  std::vector<double> kl = kl_;
  std::sort(kl.begin(), kl.end());
  s.kl_mean = mean_of(kl_);
  s.kl_se = std::sqrt(cov_of(kl_, s.kl_mean, kl_, s.kl_mean) / n);
  s.kl_median = percentile_sorted(kl, 50);
  s.kl_p90 = percentile_sorted(kl, 90);
  s.kl_p99 = percentile_sorted(kl, 99);
  s.kl_max = kl.back();

  s.top1 = double(same_top_) / n;
  s.top1_se = s.n > 1 ? std::sqrt(s.top1 * (1 - s.top1) / (n - 1)) : 0;

  double dsum = 0, dsq = 0;
  for (size_t i = 0; i < kl_.size(); ++i) {
    const double dp = std::exp(-nll_this_[i]) - std::exp(-nll_base_[i]);
    dsum += dp;
    dsq += dp * dp;
    s.dp_max_abs = std::max(s.dp_max_abs, std::abs(dp));
  }
  s.dp_mean = dsum / n;
  s.dp_rms = std::sqrt(dsq / n);
  return s;
}

}  // namespace tinfer::cli

// Quality statistics for `tinfer ppl`: the sliding-window scoring schedule, log-softmax in double,
// and the comparison of a run against a saved base run (perplexities, ΔPPL with its standard error,
// the KL divergence distribution, top-1 agreement, Δp of the target token). No model types.
#pragma once
#include <cstdint>
#include <vector>

namespace tinfer::cli {

// One window of the strided perplexity schedule: tokens [begin, end) are fed, and the targets
// first_target..end-1 (token indices) are scored, each from the logits of the position before it.
struct ScoreWindow {
  int64_t begin, end, first_target;
  int32_t first_token = -1;  // >= 0: fed in place of seq[begin] (llama.cpp puts BOS at every chunk's start)
};
// Hugging Face's strided perplexity over a sequence of n tokens: windows of ctx tokens start every
// `stride` tokens; the first window scores all its targets, each later one only the targets past
// the previous window's end (at most `stride` of them), so every target 1..n-1 is scored exactly
// once. stride = ctx-1 is windows overlapping by one token. Requires n >= 2, 1 <= stride <= ctx-1.
std::vector<ScoreWindow> score_windows(int64_t n, int64_t ctx, int64_t stride);
// llama.cpp's llama-perplexity schedule over n tokens: floor(n / ctx) disjoint chunks [k ctx, (k+1) ctx), each
// scoring its second half (targets k ctx + ctx/2 + 1 .. (k+1) ctx - 1); bos >= 0 replaces each chunk's first token
// (llama.cpp does so when the vocabulary adds BOS). The tail past the last whole chunk is not scored. Error if
// n < ctx or ctx < 4.
std::vector<ScoreWindow> llama_chunk_windows(int64_t n, int64_t ctx, int32_t bos);

// out[i] = log softmax(logits)[i], in double. Returns the argmax (lowest index on ties).
int32_t log_softmax(const float* logits, int64_t n, double* out);
// KL(p || q) = sum_i exp(lp_i) (lp_i - lq_i), nats, for two normalized log-probability rows.
double kl_divergence(const double* lp, const double* lq, int64_t n);

// Percentile q in [0, 100] of ascending `sorted` values, linear interpolation between closest ranks
// (NumPy's default method).
double percentile_sorted(const std::vector<double>& sorted, double q);

struct QualitySummary {
  int64_t n = 0;
  double nll_base = 0, nll_this = 0;  // mean NLL (nats/token)
  double ppl_base = 0, ppl_base_se = 0, ppl_this = 0, ppl_this_se = 0;
  double dppl = 0, dppl_se = 0;          // PPL(this) - PPL(base), delta method
  double ln_ratio = 0, ln_ratio_se = 0;  // mean of nll_this - nll_base = ln(PPL this / PPL base)
  double kl_mean = 0, kl_se = 0, kl_median = 0, kl_p90 = 0, kl_p99 = 0, kl_max = 0;
  double top1 = 0, top1_se = 0;                    // fraction of positions whose argmax tokens agree
  double dp_mean = 0, dp_rms = 0, dp_max_abs = 0;  // Δp = p_this(target) - p_base(target)
};

// Per-position records of a comparison, summarized at the end.
class QualityAccumulator {
 public:
  // nll_*: -log p(target) of each run; kl: KL(base || this) at this position; same_top: argmaxes equal.
  void add(double nll_base, double nll_this, double kl, bool same_top);
  QualitySummary summarize() const;  // needs at least one position

 private:
  std::vector<double> nll_base_, nll_this_, kl_;
  int64_t same_top_ = 0;
};

}  // namespace tinfer::cli

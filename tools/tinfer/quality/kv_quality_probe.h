// The measurement behind `tinfer calibrate-kv`: one token sequence scored once with an f32 KV cache (the
// base: every scored position's log-probabilities kept as float), then any KV precision scored on the same
// windows and compared with it (KLD, ΔPPL, top-1: quality_stats.h).
#pragma once
#include <cstdint>
#include <vector>

#include "tinfer/kv_precision.h"
#include "quality/quality_stats.h"

namespace tinfer {
class Backend;
class ThreadPool;
}  // namespace tinfer

namespace tinfer::cli {

class KvQualityProbe {
 public:
  // Scores seq in windows of ctx tokens overlapping by one (every target once) with an f32 KV cache. Memory:
  // 4 bytes x vocabulary per scored token. pool (may be null) spreads the log-softmax and KL rows. chunk: tokens
  // per forward (1: teacher-forced decode, what early exit needs; ppl_scoring.h).
  KvQualityProbe(Backend& backend, ThreadPool* pool, std::vector<int32_t> seq, int64_t ctx, int64_t chunk = 512);
  // The comparison of the cache in `precision` against the base (layer count must be the model's).
  QualitySummary measure(const KvPrecision& precision);
  int64_t scored_tokens() const { return int64_t(base_nll_.size()); }
  int64_t ctx() const { return ctx_; }
  double ppl_base() const { return ppl_base_; }
  int64_t evaluations() const { return evaluations_; }  // measure() calls so far

 private:
  // n rows of `logits` ([n][vocab]) into rows_ (log-probabilities, double) and tops_ (argmaxes).
  void log_softmax_rows(const float* logits, int64_t n);
  Backend& backend_;
  ThreadPool* pool_;
  std::vector<int32_t> seq_;
  int64_t ctx_, n_vocab_, chunk_;
  std::vector<ScoreWindow> windows_;
  std::vector<float> base_logp_;  // [scored][n_vocab]
  std::vector<double> base_nll_;  // [scored]
  std::vector<int32_t> base_top_;  // [scored]
  double ppl_base_ = 0;
  int64_t evaluations_ = 0;
  std::vector<double> rows_;      // [window rows][n_vocab] scratch
  std::vector<int32_t> tops_;     // [window rows]
};

}  // namespace tinfer::cli

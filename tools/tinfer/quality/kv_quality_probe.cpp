// KV quality probe: f32-cache base once, then comparisons (see kv_quality_probe.h).
#include "quality/kv_quality_probe.h"

#include <cmath>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "backend/backend.h"
#include "quality/ppl_scoring.h"

namespace tinfer::cli {

KvQualityProbe::KvQualityProbe(Backend& backend, ThreadPool* pool, std::vector<int32_t> seq, int64_t ctx, int64_t chunk)
    : backend_(backend), pool_(pool), seq_(std::move(seq)), ctx_(ctx), n_vocab_(backend.config().n_vocab), chunk_(chunk) {
  check(seq_.size() >= 2, "the calibration text gives fewer than 2 tokens");
  check(ctx_ >= 2, "--ctx must be at least 2");
  windows_ = score_windows(int64_t(seq_.size()), ctx_, ctx_ - 1);
  const int64_t n_layers = backend.config().n_layers;
  WindowLogits scorer(backend_, ctx_, KvPrecision::uniform(n_layers, KvDtype::f32), nullptr, chunk_);
  base_logp_.reserve((seq_.size() - 1) * size_t(n_vocab_));
  double total = 0;
  for (const ScoreWindow& w : windows_) {
    const int64_t n = w.end - w.first_target;
    log_softmax_rows(scorer.score(seq_, w).data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double* lp = &rows_[size_t(i * n_vocab_)];
      for (int64_t v = 0; v < n_vocab_; ++v) base_logp_.push_back(float(lp[v]));
      base_nll_.push_back(-lp[seq_[size_t(w.first_target + i)]]);
      base_top_.push_back(tops_[size_t(i)]);
      total += base_nll_.back();
    }
  }
  ppl_base_ = std::exp(total / double(base_nll_.size()));
}

void KvQualityProbe::log_softmax_rows(const float* logits, int64_t n) {
  rows_.resize(size_t(n * n_vocab_));
  tops_.resize(size_t(n));
  auto rows = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      tops_[size_t(i)] = log_softmax(logits + i * n_vocab_, n_vocab_, &rows_[size_t(i * n_vocab_)]);
  };
  if (pool_) pool_->parallel_for(n, 1, rows);
  else rows(0, n);
}

QualitySummary KvQualityProbe::measure(const KvPrecision& precision) {
  ++evaluations_;
  WindowLogits scorer(backend_, ctx_, precision, nullptr, chunk_);
  QualityAccumulator acc;
  std::vector<double> kl;
  int64_t at = 0;  // scored positions before this window
  for (const ScoreWindow& w : windows_) {
    const int64_t n = w.end - w.first_target;
    log_softmax_rows(scorer.score(seq_, w).data(), n);
    kl.assign(size_t(n), 0);
    // KL(base || this) per row. Both rows as the base is kept (float, widened to double), so that a cache
    // computing the base's very logits measures exactly 0.
    auto rows = [&](int64_t b, int64_t e) {
      std::vector<double> base(static_cast<size_t>(n_vocab_)), cur(static_cast<size_t>(n_vocab_));
      for (int64_t i = b; i < e; ++i) {
        const float* src = &base_logp_[size_t((at + i) * n_vocab_)];
        const double* lp = &rows_[size_t(i * n_vocab_)];
        for (int64_t v = 0; v < n_vocab_; ++v) base[size_t(v)] = src[v], cur[size_t(v)] = float(lp[v]);
        kl[size_t(i)] = kl_divergence(base.data(), cur.data(), n_vocab_);
      }
    };
    if (pool_) pool_->parallel_for(n, 1, rows);
    else rows(0, n);
    for (int64_t i = 0; i < n; ++i) {
      const double nll = -rows_[size_t(i * n_vocab_ + seq_[size_t(w.first_target + i)])];
      acc.add(base_nll_[size_t(at + i)], nll, kl[size_t(i)], base_top_[size_t(at + i)] == tops_[size_t(i)]);
    }
    at += n;
  }
  return acc.summarize();
}

}  // namespace tinfer::cli

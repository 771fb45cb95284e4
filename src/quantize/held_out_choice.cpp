// The held-out choice of the AWQ methods (see held_out_choice.h).
#include "quantize/held_out_choice.h"

#include <algorithm>
#include <cmath>

#include "tinfer/error.h"
#include "backend/backend.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "model/model.h"
#include "quantize/memory_sink.h"

namespace tinfer {
namespace {

// Logits after every position of tokens, [n][vocab]: windows of ctx, each from position 0, in chunks of 128.
std::vector<float> window_logits(const Model& m, const std::vector<int32_t>& tokens, int64_t ctx, ThreadPool& pool) {
  constexpr int64_t kBlock = 16, kChunk = 128;
  auto be = create_backend("cpu", m, BackendOptions{.pool = &pool, .max_positions = ctx});
  auto kv = be->allocate_kv((ctx + kBlock - 1) / kBlock, kBlock, KvDtype::f32);
  const int64_t n = int64_t(tokens.size()), vocab = m.config().n_vocab;
  std::vector<float> out(static_cast<size_t>(n * vocab));
  ForwardBatch batch;
  for (int64_t w0 = 0; w0 < n; w0 += ctx) {
    const int64_t wn = std::min(ctx, n - w0);
    for (int64_t p0 = 0; p0 < wn; p0 += kChunk) {
      const int64_t k = std::min(kChunk, wn - p0);
      batch.clear();
      batch.tokens.assign(tokens.begin() + (w0 + p0), tokens.begin() + (w0 + p0 + k));
      batch.seq.assign(size_t(k), 0);
      batch.block_tables.emplace_back();
      for (int64_t b = 0; b < (p0 + k + kBlock - 1) / kBlock; ++b) batch.block_tables[0].push_back(int32_t(b));
      for (int64_t i = 0; i < k; ++i) batch.positions.push_back(int32_t(p0 + i)), batch.logit_rows.push_back(int32_t(i));
      be->forward(batch, *kv, &out[size_t((w0 + p0) * vocab)]);
    }
  }
  return out;
}

// log-softmax of one row into lp (double).
void log_softmax(const float* x, int64_t n, std::vector<double>& lp) {
  double mx = -INFINITY, s = 0;
  for (int64_t v = 0; v < n; ++v) mx = std::max(mx, double(x[v]));
  for (int64_t v = 0; v < n; ++v) s += std::exp(double(x[v]) - mx);
  const double ls = std::log(s);
  for (int64_t v = 0; v < n; ++v) lp[size_t(v)] = double(x[v]) - mx - ls;
}

QuantMethod without_awq(QuantMethod m) { return m == QuantMethod::awq_gptq ? QuantMethod::gptq : QuantMethod::rtn; }

// Mean KL from the source's logits `a` ([n][vocab], window_logits) to quant's on the same tokens and windows.
double kl_from(const std::vector<float>& a, const Model& quant, const std::vector<int32_t>& tokens, int64_t ctx,
               ThreadPool& pool) {
  const std::vector<float> b = window_logits(quant, tokens, ctx, pool);
  const int64_t n = int64_t(tokens.size()), vocab = quant.config().n_vocab;
  std::vector<double> la(static_cast<size_t>(vocab)), lb(static_cast<size_t>(vocab));
  double kl = 0;
  int64_t scored = 0;
  for (int64_t t = 0; t + 1 < n; ++t) {
    if ((t + 1) % ctx == 0) continue;  // the last position of a window predicts the next window's first token
    log_softmax(&a[size_t(t * vocab)], vocab, la);
    log_softmax(&b[size_t(t * vocab)], vocab, lb);
    for (int64_t v = 0; v < vocab; ++v) kl += std::exp(la[size_t(v)]) * (la[size_t(v)] - lb[size_t(v)]);
    ++scored;
  }
  check(scored > 0, "held-out KL: no position to score");
  return kl / double(scored);
}

int64_t scoring_ctx(const Model& source, int64_t ctx) { return std::max<int64_t>(2, std::min(ctx, source.config().ctx_len)); }
}  // namespace

double held_out_kl(const Model& source, const Model& quant, const std::vector<int32_t>& tokens, int64_t ctx,
                   int threads) {
  check(tokens.size() >= 2, "held-out KL needs at least 2 tokens");
  check(source.config().n_vocab == quant.config().n_vocab, "held-out KL: the vocabularies differ");
  ctx = scoring_ctx(source, ctx);
  ThreadPool pool(threads);
  return kl_from(window_logits(source, tokens, ctx, pool), quant, tokens, ctx, pool);
}

QuantizeResult quantize_choosing_on_held_out(const Model& source, const QuantizeOptions& opts, QuantizedSink& out) {
  check(opts.method == QuantMethod::awq || opts.method == QuantMethod::awq_gptq,
        "the held-out choice is for the AWQ methods (awq, awq+gptq)");
  const double t0 = now_s();
  QuantizeOptions with = opts;
  with.held_out_tokens.clear();  // each candidate is quantized as it is
  QuantizeOptions without = with;
  without.method = without_awq(opts.method);
  without.awq_act_quant = false;
  MemorySink sink_with, sink_without;
  QuantizeResult r_with = quantize_tensors(source, with, sink_with);
  QuantizeResult r_without = quantize_tensors(source, without, sink_without);
  // The source's logits once, each candidate's against them.
  const std::vector<int32_t>& held = opts.held_out_tokens;
  check(held.size() >= 2, "held-out KL needs at least 2 tokens");
  const int64_t ctx = scoring_ctx(source, opts.calib.ctx);
  ThreadPool pool(opts.threads);
  const std::vector<float> base = window_logits(source, held, ctx, pool);
  const double kl_with = kl_from(base, *sink_with.to_model(source, r_with, "awq candidate"), held, ctx, pool);
  const double kl_without = kl_from(base, *sink_without.to_model(source, r_without, "baseline candidate"), held, ctx, pool);
  const bool keep_awq = kl_with <= kl_without;
  const HeldOutChoice choice{int64_t(opts.held_out_tokens.size()), kl_with, kl_without, keep_awq, r_with.method,
                             r_without.method};
  const double other_calib_s = (keep_awq ? r_without : r_with).calib_s;
  QuantizeResult res = std::move(keep_awq ? r_with : r_without);
  (keep_awq ? sink_with : sink_without).replay(out);
  if (!keep_awq) res.folds.clear();  // the written model has none of AWQ's scales
  res.calib_s += other_calib_s;
  res.total_s = now_s() - t0;
  res.held_out = choice;
  return res;
}

}  // namespace tinfer

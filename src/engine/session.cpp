// Session: chunked feeding of one sequence through the batched forward pass.
#include "engine/session.h"

#include <algorithm>
#include <numeric>

#include "tinfer/error.h"

namespace tinfer {

Session::Session(Backend& backend, int64_t max_ctx, const KvPrecision& kv_precision) : fwd_(backend), max_ctx_(max_ctx) {
  check(max_ctx >= 1 && max_ctx <= backend.max_positions(),
        "session: a context of " + std::to_string(max_ctx) + " tokens is outside [1, " +
            std::to_string(backend.max_positions()) + "], what the model can position");
  kv_ = backend.allocate_kv((max_ctx + kBlockSize - 1) / kBlockSize, kBlockSize, kv_precision);
  batch_.block_tables.resize(1);
  batch_.block_tables[0].resize(kv_->n_blocks());
  std::iota(batch_.block_tables[0].begin(), batch_.block_tables[0].end(), 0);
}

void Session::run(const int32_t* tokens, int64_t n, bool all_logits, float* out) {
  check(n_past_ + n <= max_ctx_, "context full: " + std::to_string(n_past_ + n) + " tokens exceed the context of " +
                                     std::to_string(max_ctx_));
  batch_.tokens.assign(tokens, tokens + n);
  batch_.positions.resize(n);
  std::iota(batch_.positions.begin(), batch_.positions.end(), int32_t(n_past_));
  batch_.seq.assign(n, 0);
  batch_.may_exit.assign(1, n == 1 ? 1 : 0);  // a one-token feed is a decode step: early exit may take it out
  batch_.logit_rows.clear();
  if (all_logits) {
    for (int64_t i = 0; i < n; ++i) batch_.logit_rows.push_back(int32_t(i));
  } else {
    batch_.logit_rows.push_back(int32_t(n - 1));
  }
  fwd_.forward(batch_, *kv_, out);
  n_past_ += n;
  tokens_.insert(tokens_.end(), tokens, tokens + n);
}

const std::vector<float>& Session::feed(std::span<const int32_t> tokens, int64_t chunk) {
  logits_.resize(fwd_.config().n_vocab);
  for (size_t i = 0; i < tokens.size(); i += chunk) {
    int64_t n = std::min<int64_t>(chunk, int64_t(tokens.size() - i));
    run(tokens.data() + i, n, false, logits_.data());
  }
  return logits_;
}

void Session::feed_all_logits(const std::vector<int32_t>& tokens, std::vector<float>& out, int64_t chunk) {
  const int64_t v = fwd_.config().n_vocab;
  out.resize(tokens.size() * v);
  for (size_t i = 0; i < tokens.size(); i += chunk) {
    int64_t n = std::min<int64_t>(chunk, int64_t(tokens.size() - i));
    run(tokens.data() + i, n, true, out.data() + i * v);
  }
}

}  // namespace tinfer

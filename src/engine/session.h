// Session: one sequence with its own KV blocks (identity block table), for batch-1 tools
// (run, chat, ppl, bench). Prompts are fed in chunks through the same batched forward as serving.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"

namespace tinfer {

class Session {
 public:
  static constexpr int64_t kBlockSize = 16;
  // Throws Error when max_ctx exceeds what the backend can position.
  Session(Backend& backend, int64_t max_ctx, const KvPrecision& kv_precision);
  Session(Backend& backend, int64_t max_ctx, KvDtype kv_dtype = KvDtype::f32)
      : Session(backend, max_ctx, KvPrecision::uniform(backend.config().n_layers, kv_dtype)) {}

  int64_t n_past() const { return n_past_; }
  int64_t max_ctx() const { return max_ctx_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }  // what the KV cache holds
  void reset() { truncate(0); }
  // Keeps the first n tokens (their KV stays valid); later feeds overwrite the rest.
  void truncate(int64_t n) {
    n_past_ = std::min(n, n_past_);
    tokens_.resize(n_past_);
  }
  size_t kv_bytes() const { return kv_->bytes(); }

  // Appends `tokens` (in chunks of at most `chunk`) and returns the logits after the last one. A one-token chunk
  // is a decode step, which a backend with early exit on may finish early (teacher-forced scoring feeds chunks of 1).
  const std::vector<float>& feed(std::span<const int32_t> tokens, int64_t chunk = 512);
  // One decode step: no allocation (a braced list would build a vector per token).
  const std::vector<float>& feed_token(int32_t token) { return feed(std::span<const int32_t>(&token, 1)); }
  // Appends tokens and returns the logits after every one of them: [n][n_vocab] (for perplexity).
  void feed_all_logits(const std::vector<int32_t>& tokens, std::vector<float>& out, int64_t chunk = 512);
  const std::vector<float>& logits() const { return logits_; }

 private:
  void run(const int32_t* tokens, int64_t n, bool all_logits, float* out);
  Backend& fwd_;
  int64_t max_ctx_;
  std::unique_ptr<KvCache> kv_;
  ForwardBatch batch_;
  int64_t n_past_ = 0;
  std::vector<int32_t> tokens_;
  std::vector<float> logits_;
};

}  // namespace tinfer

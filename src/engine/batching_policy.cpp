// The batching policy for a mode, and static-padded batching's padding rows.
#include "engine/batching_policy.h"

#include <algorithm>

namespace tinfer {

std::unique_ptr<BatchingPolicy> make_batching_policy(BatchingMode mode) {
  switch (mode) {
    case BatchingMode::kStatic:
      return std::make_unique<StaticBatching>();
    case BatchingMode::kStaticPadded:
      return std::make_unique<PaddedStaticBatching>();
    case BatchingMode::kContinuous:
      break;
  }
  return std::make_unique<ContinuousBatching>();
}

bool PaddedStaticBatching::adopt_finished(const Request& r) {
  rows_.push_back(Row{r.id, r.tokens, r.num_computed_tokens});
  return true;
}

void PaddedStaticBatching::plan_rows(BatchPlan& plan, int& budget, kv::KvCacheGroups& kv) {
  for (size_t i = 0; i < rows_.size() && budget > 0;) {
    Row& row = rows_[i];
    const int n = std::min(static_cast<int>(row.tokens.size()) - row.computed, budget);
    std::vector<kv::CowCopy> copies;
    if (!kv.allocate(row.id, kv::AllocRequest{.num_computed = row.computed, .num_new = n}, &copies)) {
      drop(i, kv);  // padding never waits for, or takes, blocks a real request could use
      continue;
    }
    ScheduledRequest s;
    s.id = row.id;
    s.start_pos = row.computed;
    s.tokens.assign(row.tokens.begin() + row.computed, row.tokens.begin() + row.computed + n);
    s.block_table = kv.block_table(row.id);
    if (kv.num_groups() > 1) s.window_table = kv.block_table(row.id, 1);
    s.needs_logits = row.computed + n == static_cast<int>(row.tokens.size());
    s.copies = std::move(copies);
    s.padding = true;
    plan.num_tokens += n;
    plan.requests.push_back(std::move(s));
    row_tokens_ += n;
    budget -= n;
    ++i;
  }
}

bool PaddedStaticBatching::reclaim(kv::KvCacheGroups& kv) {
  if (rows_.empty()) return false;
  drop(0, kv);  // the longest-finished member's row first
  return true;
}

void PaddedStaticBatching::update_rows(const BatchPlan& plan, std::span<const Token> sampled, int num_real_running,
                                       int max_len, kv::KvCacheGroups& kv) {
  for (size_t i = 0; i < plan.requests.size(); ++i) {
    const ScheduledRequest& s = plan.requests[i];
    if (!s.padding) continue;
    auto it = std::find_if(rows_.begin(), rows_.end(), [&](const Row& r) { return r.id == s.id; });
    if (it == rows_.end() || it->computed != s.start_pos) continue;  // dropped since
    it->computed += static_cast<int>(s.tokens.size());
    kv.commit(it->id, it->tokens, it->computed);
    if (!s.needs_logits) continue;
    // Any token will do (the row's output is discarded): the sampled one if any, else the last again.
    it->tokens.push_back(sampled[i] >= 0 ? sampled[i] : it->tokens.back());
    if (static_cast<int>(it->tokens.size()) >= max_len) drop(static_cast<size_t>(it - rows_.begin()), kv);
  }
  // The batch ends when its last real member finishes: its padding rows go with it.
  if (num_real_running == 0)
    while (!rows_.empty()) drop(rows_.size() - 1, kv);
}

bool PaddedStaticBatching::holds(RequestId id) const {
  return std::any_of(rows_.begin(), rows_.end(), [&](const Row& r) { return r.id == id; });
}

void PaddedStaticBatching::drop(size_t i, kv::KvCacheGroups& kv) {
  kv.free(rows_[i].id);
  rows_.erase(rows_.begin() + static_cast<std::ptrdiff_t>(i));
}

}  // namespace tinfer

// Batching policies: the only differences between continuous and static batching, as objects the scheduler
// calls at fixed points of a step. A policy decides who may join the running set, and may keep rows of its
// own in the batch (static-padded: a finished member stays in the batch, computed as padding, until the
// batch ends, as fixed-shape batch tensors do). The scheduler's own path knows nothing of padding.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/batch_plan.h"
#include "tinfer/batching_mode.h"
#include "tinfer/request.h"
#include "kvcache/kv_cache_groups.h"

namespace tinfer {

class BatchingPolicy {
 public:
  virtual ~BatchingPolicy() = default;
  virtual const char* name() const = 0;

  // num_running: seats in use when the step began (the policy's own rows included), before admission.
  virtual bool may_admit(int num_running) = 0;
  // After a step's admissions: whether the running set is full (max_seqs, or no blocks left for the
  // next waiting request) or nobody is left waiting.
  virtual void admissions_done(bool full_or_drained) { (void)full_or_drained; }

  // Rows of the policy's own. They hold KV blocks under the id of the request they came from, take seats
  // (num_rows) and step budget, produce no output, and give way to real requests when blocks run out.
  virtual int num_rows() const { return 0; }
  virtual int64_t row_tokens() const { return 0; }  // tokens computed for them so far
  // A real member just finished with its KV intact: true = the policy keeps its id and blocks as a row
  // (the scheduler then does not free them).
  virtual bool adopt_finished(const Request& r) { (void)r; return false; }
  // After the real requests are planned: the policy's rows join the plan within the remaining budget
  // (a row that finds no block is dropped: it never displaces a real request).
  virtual void plan_rows(BatchPlan& plan, int& budget, kv::KvCacheGroups& kv) { (void)plan, (void)budget, (void)kv; }
  // Blocks ran out for a real request: free one row's blocks. False when there is none.
  virtual bool reclaim(kv::KvCacheGroups& kv) { (void)kv; return false; }
  // After the step: rows advance (sampled[i] is plan.requests[i]'s token, -1 if nobody sampled it); rows
  // that reach max_len leave, and every row leaves once no real member runs (the batch ended).
  virtual void update_rows(const BatchPlan& plan, std::span<const Token> sampled, int num_real_running, int max_len,
                           kv::KvCacheGroups& kv) {
    (void)plan, (void)sampled, (void)num_real_running, (void)max_len, (void)kv;
  }
  // Whether `id` is one of the policy's rows (its id is still in use).
  virtual bool holds(RequestId id) const { (void)id; return false; }
};

// Waiting requests join whenever budget, max_seqs and blocks allow; finished ones leave at once.
class ContinuousBatching final : public BatchingPolicy {
 public:
  const char* name() const override { return "continuous"; }
  bool may_admit(int) override { return true; }
};

// Baseline: a batch forms only from an idle scheduler and runs until its longest member finishes;
// nobody joins meanwhile. Forming may take several steps (the token budget need not hold every
// prompt at once): the batch stays open until it is full or nobody is waiting, so it has max_seqs
// members whenever that many requests are queued, as in a server that pads a batch of prompts.
class StaticBatching : public BatchingPolicy {
 public:
  const char* name() const override { return "static"; }
  bool may_admit(int num_running) override {
    if (num_running == 0) open_ = true;
    return open_;
  }
  void admissions_done(bool full_or_drained) override {
    if (full_or_drained) open_ = false;
  }

 private:
  bool open_ = false;
};

// Static batching as fixed-shape batch tensors run it (a batched generate() call): finished members
// stay in the batch and are computed, as padding, until the longest one finishes. StaticBatching
// above instead stops computing finished members (their seats just stay empty), a stronger baseline.
class PaddedStaticBatching final : public StaticBatching {
 public:
  const char* name() const override { return "static-padded"; }
  int num_rows() const override { return static_cast<int>(rows_.size()); }
  int64_t row_tokens() const override { return row_tokens_; }
  bool adopt_finished(const Request& r) override;
  void plan_rows(BatchPlan& plan, int& budget, kv::KvCacheGroups& kv) override;
  bool reclaim(kv::KvCacheGroups& kv) override;
  void update_rows(const BatchPlan& plan, std::span<const Token> sampled, int num_real_running, int max_len,
                   kv::KvCacheGroups& kv) override;
  bool holds(RequestId id) const override;

 private:
  struct Row {
    RequestId id;
    std::vector<Token> tokens;  // the finished member's tokens, then whatever the row is fed
    int computed;               // positions whose KV is in the cache
  };
  void drop(size_t i, kv::KvCacheGroups& kv);
  std::vector<Row> rows_;  // in the order members finished
  int64_t row_tokens_ = 0;
};

std::unique_ptr<BatchingPolicy> make_batching_policy(BatchingMode mode);

}  // namespace tinfer

// Batching policies: who may join the running set in a step, and whether finished members keep their
// row. The scheduler (scheduler.h) calls them; they are the only differences between static and
// continuous batching.
#pragma once
#include <memory>

#include "engine/batching_mode.h"

namespace tinfer {

// Who may join the running set this step, and whether finished members keep their row: the only
// differences between static and continuous batching.
class BatchingPolicy {
 public:
  virtual ~BatchingPolicy() = default;
  virtual const char* name() const = 0;
  // True: a member that finishes while its batch runs keeps being computed as a padding row (its
  // output is final and reported; the row's tokens are discarded) until the batch ends.
  virtual bool pads_finished() const { return false; }
  // num_running: requests running when the step began, before any admission.
  virtual bool may_admit(int num_running) = 0;
  // After a step's admissions: whether the running set is full (max_seqs, or no blocks left for the
  // next waiting request) or nobody is left waiting.
  virtual void admissions_done(bool full_or_drained) { (void)full_or_drained; }
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
  bool pads_finished() const override { return true; }
};

std::unique_ptr<BatchingPolicy> make_batching_policy(BatchingMode mode);

}  // namespace tinfer

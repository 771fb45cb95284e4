// StepExtension: the one hook through which work beside decoding enters the engine step. Speculative decoding
// (decoding/speculator.h) is the one extension today: it drafts before schedule(), times decode-only forwards,
// and learns from what each row kept. Without one the engine holds a NoStepExtension, so the step has no
// branches on the feature. Calls are per step and per finished sequence, never per row of logits.
//
// Where a step calls it (engine.cpp, EngineImpl::step):
//   drain inbox -> before_schedule -> Scheduler::schedule -> forward -> after_forward
//   -> strategies choose every row's tokens -> after_commit -> Scheduler::update -> events
// and release() whenever a scheduler sequence leaves for good.
#pragma once
#include <functional>
#include <span>
#include <vector>

#include "engine/batch_plan.h"
#include "engine/phase_timer.h"
#include "tinfer/kv_types.h"

namespace tinfer {

class Scheduler;
struct EngineStats;

// Which running sequences take drafts, and how much of a draft each can use (a structured-output grammar cuts a
// draft at the first token it forbids: that row could never be kept). The engine answers through each sequence's
// DecodeStrategy.
class DraftGate {
 public:
  virtual bool may_draft(kv::SeqId seq) const = 0;
  virtual size_t usable_draft(kv::SeqId seq, std::span<const kv::Token> draft) = 0;

 protected:
  ~DraftGate() = default;
};

class StepExtension {
 public:
  virtual ~StepExtension() = default;
  // Before Scheduler::schedule, inside the step's scheduling phase (`timer` may switch category and must
  // return to Op::kSchedule). `gate` says which running sequences accept drafts, and how much of each.
  virtual void before_schedule(Scheduler& sched, DraftGate& gate, PhaseTimer& timer) = 0;
  // The forward of `plan` took `seconds`.
  virtual void after_forward(const BatchPlan& plan, double seconds) = 0;
  // committed[i] is what plan.requests[i] keeps (its accepted drafts, one sampled token, then appended[i] tokens
  // of a grammar's forced continuation), before update.
  virtual void after_commit(const BatchPlan& plan, std::span<const std::vector<kv::Token>> committed,
                            std::span<const int> appended) = 0;
  virtual void release(kv::SeqId seq) = 0;        // the scheduler sequence is gone
  virtual void add_stats(EngineStats& stats) const = 0;  // its own fields of the engine's stats
};

class NoStepExtension final : public StepExtension {
 public:
  void before_schedule(Scheduler&, DraftGate&, PhaseTimer&) override {}
  void after_forward(const BatchPlan&, double) override {}
  void after_commit(const BatchPlan&, std::span<const std::vector<kv::Token>>, std::span<const int>) override {}
  void release(kv::SeqId) override {}
  void add_stats(EngineStats&) const override {}
};

}  // namespace tinfer

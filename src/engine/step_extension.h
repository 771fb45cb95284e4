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

class StepExtension {
 public:
  virtual ~StepExtension() = default;
  // Before Scheduler::schedule, inside the step's scheduling phase (`timer` may switch category and must
  // return to Op::kSchedule). `may_draft` says which running sequences accept drafts.
  virtual void before_schedule(Scheduler& sched, const std::function<bool(kv::SeqId)>& may_draft,
                               PhaseTimer& timer) = 0;
  // The forward of `plan` took `seconds`.
  virtual void after_forward(const BatchPlan& plan, double seconds) = 0;
  // committed[i] is what plan.requests[i] keeps (its accepted drafts, then one sampled token), before update.
  virtual void after_commit(const BatchPlan& plan, std::span<const std::vector<kv::Token>> committed) = 0;
  virtual void release(kv::SeqId seq) = 0;        // the scheduler sequence is gone
  virtual void add_stats(EngineStats& stats) const = 0;  // its own fields of the engine's stats
};

class NoStepExtension final : public StepExtension {
 public:
  void before_schedule(Scheduler&, const std::function<bool(kv::SeqId)>&, PhaseTimer&) override {}
  void after_forward(const BatchPlan&, double) override {}
  void after_commit(const BatchPlan&, std::span<const std::vector<kv::Token>>) override {}
  void release(kv::SeqId) override {}
  void add_stats(EngineStats&) const override {}
};

}  // namespace tinfer

// DecodeStrategy: one request's decoding, as the engine step drives it. Every request owns one (plain and n > 1
// sampling: SampleStrategy; beam search: BeamStrategy), and every step runs the same lifecycle over them:
//
//   on_row()       for each plan row of the request that has logits (or prompt rows): choose the tokens the row
//                  commits, or keep the row for decide();
//   decide()       once per request that had rows, after all of them: choose what its other rows commit (a beam
//                  round needs every beam's row);
//   -- StepExtension::after_commit, then Scheduler::update --
//   on_output()    for each output update() returned for one of its sequences: report events, fork;
//   after_update() once per request that had rows: sequences for new beams, final results.
//
// What a row commits goes to StepRows::committed[i] (accepted drafts then one sampled token, or nothing), the
// results the events report to StepRows::results[i]. Calls are per request-row, never per logit.
//
// Structured output (a per-request grammar) plugs in as one more per-request object owned by SampleStrategy:
// masks each row in place right before its Sampler::sample (in on_row, and inside commit_run for every
// speculative position, so a draft the grammar forbids is simply rejected), and advances on every
// Sampler::accept of a kept token (the fork's first tokens included). Nothing in the engine step changes.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "engine/batch_plan.h"
#include "tinfer/sampler.h"
#include "engine/scheduler.h"
#include "tinfer/kv_types.h"

namespace tinfer {

class LiveRequest;

// One step's per-row scratch, indexed like plan.requests (sized and cleared by the engine each step; the
// storage is reused from step to step).
struct StepRows {
  std::vector<std::vector<Token>> committed;
  std::vector<std::vector<SampleResult>> results;
  std::vector<int> appended;  // tokens at the end of committed[i] without KV (jump-forward), see Scheduler::update
  std::vector<float> entropy_scratch;  // next_token_entropy's work area
  size_t n_vocab = 0;
};

// Row i of the plan as a strategy sees it.
struct PlanRow {
  size_t i = 0;
  const ScheduledRequest& s;
  const float* logits;         // 1 + s.num_draft rows [n_vocab], or nullptr (a prefill chunk that does not sample)
  const float* prompt_logits;  // s.tokens.size() rows of a prompt_logits chunk, or nullptr
};

// The engine's map from scheduler sequences to requests: a strategy opens a sequence before it hands it to the
// scheduler, and closes it once the scheduler is done with it (finished, aborted, dropped).
class SeqRegistry {
 public:
  virtual kv::SeqId open(LiveRequest& owner) = 0;
  virtual void close(kv::SeqId seq) = 0;

 protected:
  ~SeqRegistry() = default;
};

class DecodeStrategy {
 public:
  virtual ~DecodeStrategy() = default;
  virtual void start() = 0;  // stepping thread, when the request joins: its first sequence to the scheduler
  virtual void on_row(const PlanRow& row, StepRows& rows) = 0;
  virtual void decide(StepRows&) {}
  virtual void on_output(const RequestOutput& out, std::span<const SampleResult> results) = 0;
  virtual void after_update() {}
  virtual void abort() = 0;                   // client abort: every sequence leaves, every sample is reported
  virtual bool may_draft(kv::SeqId) const = 0;  // speculation may propose tokens after this sequence
  // How many of a draft's first tokens could be kept at all (a grammar ends it at the first one it forbids).
  virtual size_t usable_draft(kv::SeqId, std::span<const Token> draft) { return draft.size(); }
};

}  // namespace tinfer

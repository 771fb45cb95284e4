// BeamStrategy: a beam-search request as a DecodeStrategy, over its BeamGroup (decoding/beam_group.h, which maps
// the rounds onto scheduler sequences). Rows go to the group at on_row; decide() runs the round once every row
// of the step is in and commits each continuing beam's token; after_update() gives the new beams sequences and,
// when the search is done, reports the n best hypotheses (best first, as samples 0..n-1, one event per token).
// Beam sequences never speculate.
#pragma once
#include <utility>
#include <vector>

#include "engine/decoding/beam_group.h"
#include "engine/decoding/decode_strategy.h"

namespace tinfer {

class BeamStrategy final : public DecodeStrategy {
 public:
  BeamStrategy(LiveRequest& live, int n_vocab, Scheduler& sched, SeqRegistry& seqs);

  void start() override { group_.start(); }
  void on_row(const PlanRow& row, StepRows& rows) override;
  void decide(StepRows& rows) override;
  void on_output(const RequestOutput& out, std::span<const SampleResult> results) override;
  void after_update() override;
  void abort() override;
  bool may_draft(kv::SeqId) const override { return false; }

 private:
  LiveRequest& live_;
  BeamGroup group_;
  std::vector<std::pair<size_t, kv::SeqId>> rows_;  // this step's (plan row, sequence) with logits
  int cached_ = 0;                                  // prefix-cache hit of the prompt
};

}  // namespace tinfer

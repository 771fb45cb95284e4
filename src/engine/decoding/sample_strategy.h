// SampleStrategy: plain (n = 1) and parallel (n > 1) sampling of one request, as a DecodeStrategy. Sample i draws
// with seed + i (mod 2^64), so samples differ yet each is reproducible; an absent seed is resolved once.
//   n = 1: one sequence; each row's token (and its speculative drafts: commit_run verifies them with the
//          sampler) is committed at on_row.
//   n > 1: the prompt is prefilled once as one sequence. Its first row gives all n first tokens; the sequence
//          continues as the first sample that does not stop (so the others can still fork from it), and after
//          Scheduler::update the others fork from it, sharing its blocks (or, when max_seqs is full, become
//          requests of their own whose prompt ends with their token). From then on each sample is one sequence
//          like n = 1.
// A structured-output grammar (ResolvedRequest::grammar) gives each sample its own position in it (grammar_[k],
// beside samplers_[k]): every draw is masked by it (the n first draws share the start position's mask), and every
// kept token advances it. Preemption and prefix caching change no committed token, so the position stays valid.
#pragma once
#include <memory>
#include <vector>

#include "engine/decoding/decode_strategy.h"
#include "tinfer/sampler.h"

namespace tinfer {

// Jump-forward (EngineConfig::grammar_jump_forward): after each kept token, a sequence whose grammar admits one
// continuation only (TokenConstraint::forced_tokens) ends its run there and commits those tokens too
// (StepRows::appended: no KV yet, the next step computes them as one chunk) -- at the same positions with or without
// a speculator's drafts. The engine's switch and counter, shared by every request.
struct JumpForward {
  bool on = true;
  int64_t tokens = 0;
};

class SampleStrategy final : public DecodeStrategy {
 public:
  SampleStrategy(LiveRequest& live, int n_vocab, Scheduler& sched, SeqRegistry& seqs, JumpForward* jump = nullptr);

  void start() override;
  void on_row(const PlanRow& row, StepRows& rows) override;
  void on_output(const RequestOutput& out, std::span<const SampleResult> results) override;
  void after_update() override { fork_parent_ = 0; }  // a fork not made this step is not made later
  void abort() override;
  bool may_draft(kv::SeqId) const override;
  size_t usable_draft(kv::SeqId seq, std::span<const Token> draft) override;

 private:
  int index_of(kv::SeqId seq) const;
  bool is_stop(Token t) const;
  // Reports sample k's event; its sequence is closed when the event finishes it.
  void emit(int k, const SampleResult* r, bool finished, FinishReason why, int cached);
  void sample_first(const PlanRow& row, StepRows& rows);  // n > 1 before the fork
  void fork(kv::SeqId parent, int parent_index);          // n > 1: after the parent's first update
  const uint32_t* mask(int k);                            // sample k's allowed tokens, or null (all allowed)
  void keep(int k, Token t);                              // sample k keeps t: its sampler and grammar advance
  void jump_forward(size_t k, size_t row, StepRows& rows);  // commits forced_ after sample k's run

  LiveRequest& live_;
  Scheduler& sched_;
  SeqRegistry& seqs_reg_;
  std::vector<Sampler> samplers_;     // [n]
  std::vector<std::unique_ptr<TokenConstraint>> grammar_;  // [n] each sample's grammar position, or empty
  std::vector<uint32_t> mask_;        // mask_words(n_vocab) scratch for the row being sampled
  std::vector<kv::SeqId> seqs_;       // [n] each sample's scheduler sequence; 0 before the fork and once done
  bool forked_;                       // n == 1, or the n sequences exist
  JumpForward* jump_;                 // null: no jump-forward
  std::vector<Token> forced_;         // commit_run's forced continuation, committed by jump_forward()
  std::vector<SampleResult> firsts_;  // n > 1, the fork's step: the n first samples of the parent's row
  kv::SeqId fork_parent_ = 0;         // the sequence whose output this step forks the others, or 0
};

}  // namespace tinfer

// The serving side of one beam-search request: which scheduler sequence holds each live beam, each beam's
// penalty history (a Sampler), and the rounds. A round needs one logits row per live beam; rows usually come
// in one step (all beams decode together), but a beam that was preempted, re-added or left out by the token
// budget brings its row later. So:
//   - on_row() turns a row into the beam's continuations (penalised log-softmax, top 2*width) and keeps only those;
//   - decide(), before Scheduler::update: with every row in, runs the round (BeamSearch::step). Each parent
//     sequence continues as its first child (commit() gives the token update() appends), parents without
//     children are aborted (update() skips them), the whole set is aborted when the search is done. With rows
//     still missing, the sequences whose rows arrived are aborted now (their blocks back to the pool, so the
//     missing ones can always be scheduled): their children get a fresh sequence later;
//   - after_update(): every other new beam gets a sequence: Scheduler::fork of its parent (blocks shared
//     copy-on-write, last token replaced) when the parent is still running and a seat is free, else a new
//     request whose prompt is prompt + the beam's tokens (recomputed; the prefix cache may cover it).
// Scheduler sequences carry no stop ids: only the round decides when a beam ends.
// With a grammar (structured output) each beam has its own position in it: its row is masked before the
// continuations are ranked, and every child forks its parent's position and advances it by its token.
#pragma once
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/decoding/beam_search.h"
#include "tinfer/token_constraint.h"
#include "tinfer/request_resolver.h"
#include "tinfer/sampler.h"
#include "tinfer/kv_types.h"

namespace tinfer {

class Scheduler;

class BeamGroup {
 public:
  // How the group gets and gives back scheduler sequence ids (the engine maps them to the request).
  struct Hooks {
    std::function<kv::SeqId()> new_seq;
    std::function<void(kv::SeqId)> drop_seq;  // the sequence left the scheduler
  };

  BeamGroup(const ResolvedRequest& req, int n_vocab, Scheduler& sched, Hooks hooks);

  void start();  // queues the prompt as the first beam's sequence
  // A logits row [n_vocab] of one of the group's sequences, after its last token.
  void on_row(kv::SeqId seq, const float* logits);
  void decide();  // before Scheduler::update; a no-op when no row came this step
  // The token `seq` keeps in this step's update(), if it continues (valid after decide()).
  std::optional<Token> commit(kv::SeqId seq) const;
  void after_update();  // after Scheduler::update: sequences for the new beams that have none
  void abort_all();     // every sequence leaves the scheduler (client abort)

  bool done() const { return search_.done(); }
  std::vector<Hypothesis> results() const { return search_.best(width_); }
  int64_t rows_used() const { return rows_used_; }  // logits rows consumed: one computed position each

 private:
  struct Slot {               // one live beam (same order as search_.beams())
    kv::SeqId seq = 0;        // 0: none yet (after_update() gives one)
    kv::SeqId fork_from = 0;  // when seq == 0: the parent sequence to fork, if it still runs
    int sampler = 0;          // index into samplers_
    std::optional<std::vector<BeamToken>> conts;  // this round's continuations, once its row came
    std::unique_ptr<TokenConstraint> grammar;     // its grammar position (structured output), or null
  };
  void drop(kv::SeqId seq);   // aborts it in the scheduler
  void add_request(Slot& s);  // a new sequence holding prompt + the beam's tokens

  const ResolvedRequest& req_;
  int n_vocab_;
  int width_;
  Scheduler& sched_;
  Hooks hooks_;
  BeamSearch search_;
  // Penalty histories. Without penalties one sampler serves every beam (logit_bias only, no history).
  bool per_beam_history_;
  std::vector<Sampler> samplers_;
  std::vector<Slot> slots_;
  std::unordered_map<kv::SeqId, int> slot_of_;     // live sequences -> slot
  std::unordered_map<kv::SeqId, Token> commits_;   // this step: sequence -> token update() appends
  std::vector<uint32_t> mask_;  // a grammar's mask scratch
  bool rows_this_step_ = false;
  int64_t rows_used_ = 0;
};

}  // namespace tinfer

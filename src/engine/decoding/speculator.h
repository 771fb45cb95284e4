// Speculator: speculative decoding's per-step policy, between the engine and the scheduler, plugged into the step
// as its StepExtension (engine/step_extension.h). Before a step it asks the drafter for tokens to follow every
// decoding request that opted in and hands them to the scheduler (Scheduler::propose); after the forward, a
// request's strategy verifies its drafts with its own sampler (commit_run() below), and after_commit() learns
// from what each row kept.
//
// Adaptive K. A decode step's cost is modelled as T(R) = T1 * (1 + c * (R - 1)) for R rows (one weight pass,
// c = SpecConfig::row_cost per extra row), and request i's drafts as kept one after another with probability
// a_i (its measured acceptance, decayed so it follows the text). The j-th draft of request i then adds a_i^j
// expected tokens for one more row. Rows are handed out greedily, best marginal gain first, while a row still
// raises the step's expected tokens per unit time: a_i^j > c * E / (1 + c * (R - 1)), E and R being the
// expected tokens and rows so far. At batch 1 a draft pays as soon as a > c; as the batch grows each row's
// price grows with it and drafting fades out; from SpecConfig::disable_batch up it is off. A request whose
// acceptance priced it out is probed with one draft after kProbeEvery steps so it can come back; each probe
// that keeps nothing doubles the wait (up to kMaxProbeEvery), for that request and for requests to come. c is
// measured (StepCostModel over the engine's decode-only steps; SpecConfig::row_cost until it has seen enough),
// the drafter's own time per draft token d is added to each row's price (a draft model's forwards; ~0 for
// prompt lookup), and a new request's acceptance starts from the recent acceptance of all requests (a poor
// drafter stays off).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/decoding/drafter.h"
#include "tinfer/spec_config.h"
#include "engine/decoding/step_cost.h"
#include "tinfer/sampler.h"
#include "engine/step_extension.h"
#include "tinfer/token_constraint.h"
#include "tinfer/kv_types.h"

namespace tinfer {

class Scheduler;

struct SpecStats {
  int64_t proposals = 0;  // requests that received a non-empty draft
  int64_t proposed = 0;   // draft tokens proposed (the scheduler may schedule fewer)
};

class Speculator final : public StepExtension {
 public:
  static constexpr int kProbeEvery = 8, kMaxProbeEvery = 128;

  Speculator(const SpecConfig& config, std::unique_ptr<Drafter> drafter);

  // Before schedule(): drafts for the decoding requests `allowed` accepts, handed to the scheduler.
  void propose(Scheduler& sched, DraftGate& gate);
  // After verification: `accepted` of `drafted` tokens were kept for seq.
  void record(kv::SeqId seq, int drafted, int accepted);
  // A decode-only step of `rows` rows took `seconds` in the forward (the row-cost model's sample).
  void observe_step(int rows, double seconds) { cost_.observe(rows, seconds); }
  double row_cost() const { return cost_.row_cost(); }
  void release(kv::SeqId seq) override;  // the sequence is gone

  // StepExtension: propose() timed as Op::kDraft; observe_step() on decode-only plans; record() per drafted row.
  void before_schedule(Scheduler& sched, DraftGate& gate, PhaseTimer& timer) override;
  void after_forward(const BatchPlan& plan, double seconds) override;
  void after_commit(const BatchPlan& plan, std::span<const std::vector<kv::Token>> committed,
                    std::span<const int> appended) override;
  void add_stats(EngineStats& stats) const override;

  // The number of drafts each speculating request gets this step, given their acceptance estimates, whether a
  // probe is due for each, and how many requests decode in the step in all (those that do not speculate are
  // rows too). Exposed for tests.
  std::vector<int> allocate(std::span<const double> acceptance, std::span<const bool> probe_due, int batch) const;
  // Drafting's measured time per draft token, in one-row decode steps (0 until measured).
  double draft_cost() const;
  double acceptance(kv::SeqId seq) const;
  double global_acceptance() const { return global_kept_ / global_tried_; }
  const SpecStats& stats() const { return stats_; }
  const SpecConfig& config() const { return config_; }

 private:
  struct SeqState {
    double kept = 1.0, tried = 2.0;  // decayed counts; the prior: two trials at the global acceptance
    int idle = 0;                     // steps since it last drafted
    int probe_every = kProbeEvery;    // idle steps before the next probe
    bool probing = false;             // the current draft is a probe
  };
  SeqState& state(kv::SeqId seq);
  SpecConfig config_;
  StepCostModel cost_;
  double global_kept_ = 1.0, global_tried_ = 2.0;  // over all requests, decayed
  double draft_seconds_ = 0, draft_tokens_ = 0;     // drafter time and tokens asked for, decayed
  int global_probe_every_ = kProbeEvery;             // a new request's first probe wait
  std::unique_ptr<Drafter> drafter_;
  std::unordered_map<kv::SeqId, SeqState> seqs_;
  SpecStats stats_;
  std::vector<DraftQuery> queries_;
};

// Verifies one request's drafts against its logit rows (rows[j * n_vocab ...] scores the position after the
// last known token and j drafts) with its sampler, position by position: the sampler draws the token exactly as
// it would without speculation (same penalties, filters and seeded draw), the result is accepted into the
// sampler and appended to *out, and the run stops at the first draw that differs from the draft, or after the
// draw past the last draft. Returns the number of drafts kept.
//
// Why this is the standard rule (Leviathan et al. 2023; Chen et al. 2023). Their rule keeps a draft x drawn
// from q with probability min(1, p(x) / q(x)) and, at the first rejection, draws from max(0, p - q)
// renormalised. Every drafter here is deterministic (prompt lookup; draft models propose their argmax), so q is
// the point mass at x: keep x with probability p(x), else draw from p without x. Drawing t ~ p with the
// target's own seeded draw and keeping x iff t == x realises exactly that (P(t = x) = p(x); given t != x, t is
// distributed as p without x), so every committed token is what non-speculative decoding would commit, greedy
// or seeded sampling alike, and speculation changes only how many are committed in a step
// (tests/engine/test_spec_commit.cpp checks the distribution and the acceptance rate).
// With a grammar, each position's mask is filled from the grammar's state after the tokens kept before it, and
// every kept token advances it: the same masks as without speculation, so the same tokens (a draft the grammar
// forbids can never equal the draw, so the run ends there). `mask` is mask_words(n_vocab) words of scratch.
// Jump-forward (forced non-null): after each kept token the grammar is asked for a forced continuation; when it has
// one the run ends there (later drafts are rejected) and *forced holds it, for the caller to commit after the run --
// at the same positions with or without drafts, so speculation still changes no token.
int commit_run(Sampler& sampler, const float* rows, size_t n_vocab, std::span<const kv::Token> draft,
               std::vector<SampleResult>* out, TokenConstraint* grammar = nullptr, std::span<uint32_t> mask = {},
               std::vector<kv::Token>* forced = nullptr);

}  // namespace tinfer

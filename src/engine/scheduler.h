// Scheduler (vLLM v1 style, no prefill/decode phases): each step hands a token budget to running requests
// (decodes first, then prefill chunks) and then to waiting ones, and returns a plain BatchPlan value. The model
// runner executes the plan and calls update() with the sampled tokens. Depends only on kvcache and core.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/batch_plan.h"
#include "engine/batching_policy.h"
#include "tinfer/request.h"
#include "tinfer/request_resolver.h"
#include "tinfer/scheduler_config.h"
#include "kvcache/kv_cache_groups.h"

namespace tinfer {

// An event for the client: a sampled token, and/or the end of the request.
struct RequestOutput {
  RequestId id = 0;
  std::vector<Token> new_tokens;  // committed this step: none, one, or (speculative) several
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  std::vector<Token> output_tokens;  // every output token; filled when finished
  int num_prompt_tokens = 0;
  int num_cached_prompt_tokens = 0;
};

struct SchedulerStats {
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t scheduled_tokens = 0;  // tokens computed over all steps (prefill + decode + recompute + padding)
  int64_t padding_tokens = 0;    // of which the batching policy's own rows (PaddedStaticBatching)
  int64_t finished = 0;
  // Speculative decoding: draft tokens scheduled for verification, how many were kept, and the decode steps
  // that carried drafts.
  int64_t spec_drafted = 0, spec_accepted = 0, spec_steps = 0;
};

class Scheduler {
 public:
  // Throws tinfer::Error listing every problem of the config.
  Scheduler(SchedulerConfig config, kv::KvCacheGroups kv,
            std::unique_ptr<BatchingPolicy> policy = std::make_unique<ContinuousBatching>());

  // Queues a resolved request (tinfer/request_resolver.h) as sequence `id`: limits and stop ids are taken as
  // given. A continuation (a forked sample or beam re-added as a request of its own) has `generated` tokens
  // already chosen: its prompt is the request's prompt followed by them, and its output limit shrinks by as many.
  // Beam sequences carry no stop ids (StopIds::kNone): only the search decides when a beam ends. Throws as below.
  enum class StopIds { kResolved, kNone };
  void add(RequestId id, const ResolvedRequest& req, std::span<const Token> generated = {},
           StopIds stops = StopIds::kResolved);
  // The same from its parts (tests): throws for a duplicate id, an empty prompt, a prompt leaving no room for
  // one output, or max_tokens < 1.
  void add(RequestId id, RequestParams params);
  // Speculative decoding: `draft` are tokens proposed to follow running request `id`'s last token. If the next
  // schedule() runs the request's decode step, it appends as many of them as its budget, its output and length
  // limits and the free blocks allow (drafts never preempt anyone); the caller verifies them and update() keeps
  // a prefix. Proposals not used by the next schedule() are dropped.
  void propose(RequestId id, std::vector<Token> draft);
  // Running requests whose next step is a decode (exactly one token without KV), in admission order.
  std::vector<RequestId> decoding() const;
  BatchPlan schedule();
  // committed[i] is what plan.requests[i] keeps (ignored unless needs_logits): its accepted drafts (a prefix of
  // them, checked) followed by one sampled token. KV of the rejected drafts is rolled back before the prefix
  // cache sees the blocks. Outputs stop at the first token that finishes the request. Requests aborted or
  // preempted since the plan was made are skipped. Finished requests leave at once, their blocks returned.
  // appended[i] (empty: none): tokens at the end of committed[i] that follow the sampled one without KV of their own
  // (a grammar's forced continuation, jump-forward); the next step computes them as one chunk.
  std::vector<RequestOutput> update(const BatchPlan& plan, std::span<const std::vector<Token>> committed,
                                    std::span<const int> appended = {});
  // Without drafts: sampled[i] is the one token drawn for plan.requests[i].
  std::vector<RequestOutput> update(const BatchPlan& plan, std::span<const Token> sampled);
  // Any state; blocks return at once. nullopt for an unknown (or already finished) id.
  std::optional<RequestOutput> abort(RequestId id);
  // Parallel sampling / beam search: `child` becomes a running copy of running `parent`, sharing its blocks.
  // With last_token, the child's last (not yet computed) output token is replaced; returns the child's final
  // output if that token already finishes it.
  std::optional<RequestOutput> fork(RequestId parent, RequestId child, std::optional<Token> last_token = {});

  bool has_unfinished() const { return !requests_.empty(); }
  int num_waiting() const { return static_cast<int>(waiting_.size() + background_.size()); }
  // Seats in use: running requests and the batching policy's own rows (bounded by max_seqs together).
  int num_running() const { return static_cast<int>(running_.size()) + policy_->num_rows(); }
  int num_background_running() const { return background_running_; }
  int num_background_waiting() const { return static_cast<int>(background_.size()); }
  int num_padding() const { return policy_->num_rows(); }
  const Request* find(RequestId id) const;
  const kv::KvCacheGroups& kv() const { return kv_; }
  const SchedulerConfig& config() const { return config_; }
  const BatchingPolicy& policy() const { return *policy_; }
  SchedulerStats stats() const { return stats_; }
  int max_len() const { return max_len_; }  // min(max_model_len, KV capacity in tokens)

 private:
  void preempt(Request& r);
  void remove_running(RequestId id);
  FinishReason stop_reason(const Request& r) const;
  std::deque<RequestId>& queue_of(const Request& r) {
    return r.priority == Priority::kBackground ? background_ : waiting_;
  }
  // The next waiting request admission may take, or nullptr: interactive ones first; background ones only
  // when no interactive request waits and fewer than max_background_running run.
  Request* next_waiting();
  // release_kv false: the batching policy adopted the request's blocks (and its id) as a row of its own.
  RequestOutput finish(Request& r, FinishReason reason, bool release_kv = true);
  // Blocks ran out for running request `id`: the policy's rows give theirs first, then the newest running
  // request not yet scheduled this step is preempted. False when `id` itself had to go.
  bool make_room(RequestId id, const std::unordered_set<RequestId>& scheduled, BatchPlan& plan);
  void emit(BatchPlan& plan, const Request& r, int n, std::vector<kv::CowCopy> copies,
            std::span<const Token> draft = {});
  // schedule()'s second half: waiting requests join in FCFS order while seats, budget and blocks last.
  void admit_waiting(BatchPlan& plan, int& budget, std::unordered_set<RequestId>& scheduled);
  // How many of the proposed drafts request r's decode step can carry with `budget` tokens left.
  int draft_room(const Request& r, int budget) const;

  SchedulerConfig config_;
  kv::KvCacheGroups kv_;
  std::unique_ptr<BatchingPolicy> policy_;
  int max_len_ = 0;
  std::unordered_map<RequestId, Request> requests_;  // waiting + running
  std::deque<RequestId> waiting_;                    // interactive, FCFS; preempted ones go to the front
  std::deque<RequestId> background_;                 // background class, FCFS; admitted after waiting_
  int background_running_ = 0;
  std::vector<RequestId> running_;                   // admission order
  std::unordered_map<RequestId, std::vector<Token>> drafts_;  // propose() -> the next schedule()
  uint64_t next_admit_ = 0;
  uint64_t next_step_ = 0;
  SchedulerStats stats_;
};

}  // namespace tinfer

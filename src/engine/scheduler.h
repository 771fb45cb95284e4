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

#include "engine/request.h"
#include "kvcache/kv_cache_manager.h"

namespace tinfer {

struct SchedulerConfig {
  int max_batched_tokens = 2048;  // token budget of one step, over all requests
  int max_seqs = 64;              // requests running at once
  bool chunked_prefill = true;    // off: a prompt is admitted only when it fits the remaining budget whole
  int max_model_len = 4096;       // prompt + outputs; also capped by the KV capacity
  int default_max_tokens = 256;   // when a request gives none
  int max_tokens_cap = 4096;      // hard cap: larger asks are clamped (Request::clamped)
  std::vector<Token> eos_ids;     // the model's EOS/EOG ids: finish with "stop" unless ignore_eos

  // Every problem, one message each; empty when valid.
  std::vector<std::string> validate() const;
};

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

// One request's share of a step. Position p's KV lives in block_table[p / block_size], slot p % block_size.
struct ScheduledRequest {
  RequestId id = 0;
  int start_pos = 0;                     // == num_computed_tokens before the step
  std::vector<Token> tokens;             // ids at positions start_pos .. start_pos + tokens.size() - 1
  std::vector<kv::BlockId> block_table;  // covers positions 0 .. start_pos + tokens.size() - 1
  bool needs_logits = false;             // chunk ends at the last known token: sample exactly one token
  std::vector<kv::CowCopy> copies;       // copy these blocks (all layers, K and V) before writing
  bool padding = false;                  // a finished member's padding row (PaddedStaticBatching): any token will do
  int context_len() const { return start_pos + static_cast<int>(tokens.size()); }  // attend over [0, this)
};

struct BatchPlan {
  uint64_t step = 0;
  int block_size = 0;
  int num_tokens = 0;  // sum of tokens.size(); <= max_batched_tokens
  std::vector<ScheduledRequest> requests;
  std::vector<RequestId> preempted;  // lost their KV this step; they recompute later
  bool empty() const { return requests.empty(); }
};

// An event for the client: a sampled token, and/or the end of the request.
struct RequestOutput {
  RequestId id = 0;
  std::vector<Token> new_tokens;  // sampled this step (zero or one)
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  std::vector<Token> output_tokens;  // every output token; filled when finished
  int num_prompt_tokens = 0;
  int num_cached_prompt_tokens = 0;
  bool clamped = false;
};

struct SchedulerStats {
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t scheduled_tokens = 0;  // tokens computed over all steps (prefill + decode + recompute + padding)
  int64_t padding_tokens = 0;    // of which padding rows (PaddedStaticBatching)
  int64_t finished = 0;
};

class Scheduler {
 public:
  // Padding rows take ids from here up, outside any id a client is expected to use.
  static constexpr RequestId kFirstPaddingId = RequestId(1) << 62;

  // Throws tinfer::Error listing every problem of the config.
  Scheduler(SchedulerConfig config, kv::KvCacheConfig kv_config,
            std::unique_ptr<BatchingPolicy> policy = std::make_unique<ContinuousBatching>());

  // Queues a request. Throws for a duplicate id, an empty prompt, or a prompt leaving no room for one output.
  void add(RequestId id, RequestParams params);
  BatchPlan schedule();
  // sampled[i] is the token drawn for plan.requests[i] (ignored unless needs_logits). Requests aborted or
  // preempted since the plan was made are skipped. Finished requests leave at once, their blocks returned.
  std::vector<RequestOutput> update(const BatchPlan& plan, std::span<const Token> sampled);
  // Any state; blocks return at once. nullopt for an unknown (or already finished) id.
  std::optional<RequestOutput> abort(RequestId id);
  // Parallel sampling / beam search: `child` becomes a running copy of running `parent`, sharing its blocks.
  // With last_token, the child's last (not yet computed) output token is replaced; returns the child's final
  // output if that token already finishes it.
  std::optional<RequestOutput> fork(RequestId parent, RequestId child, std::optional<Token> last_token = {});

  bool has_unfinished() const { return requests_.size() > padding_.size(); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  int num_running() const { return static_cast<int>(running_.size()); }  // padding rows included
  int num_padding() const { return static_cast<int>(padding_.size()); }
  const Request* find(RequestId id) const;
  const kv::KvCacheManager& kv() const { return kv_; }
  const SchedulerConfig& config() const { return config_; }
  const BatchingPolicy& policy() const { return *policy_; }
  SchedulerStats stats() const { return stats_; }
  int max_len() const { return max_len_; }  // min(max_model_len, KV capacity in tokens)

 private:
  void preempt(Request& r);
  void remove_running(RequestId id);
  // Padding rows: a finished member's KV and tokens move to a fresh internal id that keeps its seat.
  void keep_as_padding(const Request& r);
  void drop_padding(RequestId id);
  void drop_padding_if_batch_done();
  FinishReason stop_reason(const Request& r) const;
  RequestOutput finish(Request& r, FinishReason reason);
  void emit(BatchPlan& plan, const Request& r, int n, std::vector<kv::CowCopy> copies);

  SchedulerConfig config_;
  kv::KvCacheManager kv_;
  std::unique_ptr<BatchingPolicy> policy_;
  int max_len_ = 0;
  std::unordered_map<RequestId, Request> requests_;  // waiting + running
  std::deque<RequestId> waiting_;                    // FCFS; preempted ones go to the front
  std::vector<RequestId> running_;                   // admission order
  std::unordered_set<RequestId> padding_;            // running padding rows (internal ids)
  RequestId next_padding_id_ = kFirstPaddingId;
  uint64_t next_admit_ = 0;
  uint64_t next_step_ = 0;
  SchedulerStats stats_;
};

}  // namespace tinfer

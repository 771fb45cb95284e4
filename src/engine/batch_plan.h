// BatchPlan: one step's work as plain data, made by the Scheduler (and its batching policy) and executed by
// the ModelRunner.
#pragma once
#include <cstdint>
#include <vector>

#include "tinfer/request.h"
#include "tinfer/kv_types.h"

namespace tinfer {

// One request's share of a step. Position p's KV lives in block_table[p / block_size], slot p % block_size.
struct ScheduledRequest {
  RequestId id = 0;
  int start_pos = 0;                     // == num_computed_tokens before the step
  std::vector<Token> tokens;             // ids at positions start_pos .. start_pos + tokens.size() - 1
  std::vector<kv::BlockId> block_table;  // covers positions 0 .. start_pos + tokens.size() - 1
  // The sliding-window layers' own table (KV group 1: kvcache/kv_cache_groups.h), kNoBlock before the window;
  // empty when every layer uses block_table.
  std::vector<kv::BlockId> window_table;
  bool needs_logits = false;             // chunk ends at the last known token: sample (1 + num_draft rows)
  // Speculative decoding: the last num_draft tokens are drafts proposed after the last known token, not yet
  // verified. Their KV is written like any other; the caller keeps a prefix of them (update()) and the rest
  // is rolled back. 0 for every prefill chunk and for plain decoding.
  int num_draft = 0;
  std::vector<kv::CowCopy> copies;       // copy these blocks (all layers, K and V) before writing
  bool padding = false;                  // a row computed for the batch's shape only (a policy's padding row):
                                         // nobody samples it; its output is discarded
  // A prompt chunk of a request that reports its prompt entropy (RequestParams::prompt_logits): every token of
  // the chunk gets a logit row (the runner's prompt_logits()); the sampling row, if any, is still logits().
  bool prompt_logits = false;
  // The step feeds one output token alone (no drafts): plain decode, the only row early exit may take out.
  bool decode = false;
  int context_len() const { return start_pos + static_cast<int>(tokens.size()); }  // attend over [0, this)
  int num_logits() const { return needs_logits ? 1 + num_draft : 0; }  // logit rows: the last token's and the drafts'
};

struct BatchPlan {
  uint64_t step = 0;
  int block_size = 0;
  int num_tokens = 0;  // sum of tokens.size() (drafts included); <= max_batched_tokens
  std::vector<ScheduledRequest> requests;
  std::vector<RequestId> preempted;  // lost their KV this step; they recompute later
  bool empty() const { return requests.empty(); }
};

}  // namespace tinfer

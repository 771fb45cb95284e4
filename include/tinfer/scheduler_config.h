// SchedulerConfig: the scheduler's limits, a plain value (EngineConfig::scheduler hands it to the Scheduler whole).
#pragma once
#include <string>
#include <vector>

namespace tinfer {

struct SchedulerConfig {
  int max_batched_tokens = 2048;  // token budget of one step, over all requests
  int max_seqs = 64;              // requests running at once
  bool chunked_prefill = true;    // off: a prompt is admitted only when it fits the remaining budget whole
  int max_model_len = 4096;       // prompt + outputs; also capped by the KV capacity
  int max_background_running = 2; // background-class requests running at once (admission bound)
  // Hash blocks holding output tokens into the prefix cache. Off under early exit: an exited token's deeper K/V
  // is state-copied, not what a prefill of the same text computes, so another request must not reuse it.
  bool cache_outputs = true;

  // Every problem, one message each; empty when valid.
  std::vector<std::string> validate() const;
};

}  // namespace tinfer

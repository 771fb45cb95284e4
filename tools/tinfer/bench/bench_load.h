// Drives an in-process Engine with a Workload, as a client would, and times every request: the load loop
// shared by `tinfer bench throughput` and `tinfer bench ladder`.
#pragma once
#include <cstdint>
#include <vector>

#include "bench/bench_workload.h"
#include "tinfer/engine.h"

namespace tinfer::cli {

struct Timing {  // one request, seconds on the steady clock
  double submit = 0, first = 0, last = 0;
  int tokens = 0;
  int finished = 0;  // samples (or beam results) finished
};

struct LoadResult {
  double wall_s = 0;
  int64_t prompt_tokens = 0, gen_tokens = 0;
  // Per request: first-token latency; mean gap between later tokens; end-to-end latency (submit to
  // last token, what a client of a non-streaming API waits for).
  std::vector<double> ttft, tpot, e2e;
  EngineStats stats;
  double mean_waste = 0;  // reserved-but-unwritten share of held KV slots, averaged over steps
  int64_t peak_waste_slots = 0;
};

// Submits requests (at most `concurrency` in flight, 0 = all at once) and steps the engine until all finish.
// beams > 0: every request is a beam search of that width (its tokens: all the returned hypotheses').
LoadResult run_load(Engine& e, const Workload& w, int concurrency, const SamplingParams& sampling, int beams = 0);

}  // namespace tinfer::cli

// LiveRequest: one request on the engine's stepping thread: its resolved form, the client's callback, what each
// of its n samples has been told so far, its routing entropy (report_entropy requests) and its DecodeStrategy.
// emit() is the only way an event leaves the engine: TokenEvent (include/tinfer/engine.h) is built here.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <tinfer/engine.h>

#include "engine/decoding/beam_search.h"
#include "engine/decoding/decode_strategy.h"
#include "engine/entropy.h"

namespace tinfer {

class LiveRequest {
 public:
  // generated: the engine's count of delivered tokens (each token event adds one).
  LiveRequest(ResolvedRequest r, EventCallback on_event, int64_t* generated);

  RequestId id = 0;  // set when the request is queued
  const ResolvedRequest req;
  std::unique_ptr<DecodeStrategy> strategy;
  std::optional<RequestEntropy> entropy;  // report_entropy only: the prompt's, reported on every event
  uint64_t last_step = UINT64_MAX;        // the engine's: the last step this request had rows in

  // One event for sample `index`: a token (s non-null) and/or its end (the first finish counts; later ones only
  // repeat the event). cached: the prompt tokens the prefix cache gave; beam: the result's hypothesis.
  void emit(int index, const SampleResult* s, bool finished, FinishReason why, int cached,
            const Hypothesis* beam = nullptr);
  bool sample_done(int index) const { return done_[size_t(index)]; }
  bool done() const { return num_done_ >= req.n; }

 private:
  EventCallback on_event_;
  int64_t* generated_;
  std::vector<int> completion_;  // [n] tokens delivered so far
  std::vector<bool> done_;       // [n]
  int num_done_ = 0;
};

}  // namespace tinfer

// The one thread that drives Engine::step(): it steps while the engine has work and sleeps on a
// condition variable otherwise. It also owns the server's low-priority lane for long requests, which
// it feeds to the engine between steps only while the engine's queue is short (see submit()).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "tinfer/engine.h"

namespace tinfer::server {

// Where a submitted request is: held in the long lane, in the engine (id valid), or failed/cancelled.
struct Ticket {
  std::mutex mu;
  bool in_engine = false;
  bool cancelled = false;
  bool released = false;  // a long ticket's in-flight slot was given back
  RequestId id = 0;
  std::string error;  // add_request threw (only for lane submissions; direct ones throw to the caller)
};

struct LaneLimits {
  int max_in_flight = 2;  // long requests in the engine at once
  int max_waiting = 0;    // submit a long one only while engine waiting <= this
};

class EngineDriver {
 public:
  EngineDriver(Engine& engine, LaneLimits lane);
  ~EngineDriver();  // stops the thread (in-flight requests are left as they are)

  // Direct submission (short requests): throws Error from add_request (bad params, prompt too long).
  // Long submissions are queued; the ticket tells when they reach the engine. The callback runs on
  // the engine thread and must only hand the event over (no engine calls).
  std::shared_ptr<Ticket> submit(GenerationRequest req, EventCallback cb, bool long_lane);
  // Cancels a lane entry or aborts the engine request. For long tickets, also frees the lane slot.
  void cancel(const std::shared_ptr<Ticket>& t, bool long_lane);
  // Called by the owner of a long ticket when it is done with it (frees its in-flight slot).
  void release_long(const std::shared_ptr<Ticket>& t);

  EngineStats stats() const { return engine_.stats(); }
  int lane_waiting() const;
  void stop();

 private:
  void loop();
  void pump_lane();  // engine thread, between steps

  struct LaneEntry {
    std::shared_ptr<Ticket> ticket;
    GenerationRequest req;
    EventCallback cb;
  };
  Engine& engine_;
  LaneLimits lane_limits_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t wakeups_ = 0;  // bumped on every submit/abort so the loop re-checks has_work()
  std::deque<LaneEntry> lane_;
  int long_in_flight_ = 0;
  std::thread thread_;
};

}  // namespace tinfer::server

// The one thread that drives Engine::step(): it steps while the engine has work and sleeps on a
// condition variable otherwise. (Long jobs are the engine's background priority class now, so every
// lane and limit lives in the scheduler, where offline users of the engine get it too.)
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "tinfer/engine.h"

namespace tinfer::server {

class EngineDriver {
 public:
  explicit EngineDriver(Engine& engine);
  ~EngineDriver();  // stops the thread (in-flight requests are left as they are)

  Engine& engine() const { return engine_; }
  // The callback runs on the engine thread and must only hand the event over (no engine calls).
  RequestId submit(ResolvedRequest req, EventCallback cb);
  // Aborts the engine request (its blocks return at the next step); unknown or finished ids are ignored.
  void cancel(RequestId id);

  EngineStats stats() const { return engine_.stats(); }
  void stop();

 private:
  void loop();
  void wake();

  Engine& engine_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t wakeups_ = 0;  // bumped on every submit/abort so the loop re-checks has_work()
  std::thread thread_;
};

}  // namespace tinfer::server

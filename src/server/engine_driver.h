// The one thread that drives Engine::step(): it steps while an engine has work and sleeps on a condition variable
// otherwise. (Long jobs are the engine's background priority class now, so every lane and limit lives in the
// scheduler, where offline users of the engine get it too.)
//
// Routing between models serves two engines from one process. One thread steps both, alternately (one step of
// each engine with work per round), rather than one thread per engine: each engine's thread pool is sized for the
// whole machine, so two stepping threads would run 2x the cores' worth of threads and preempt each other in the
// middle of every GEMM; alternating keeps exactly one pool busy at a time and lets each step use every core.
// Measured against a thread per engine (BENCHMARKS §1n, noisy): +11% for the thread per engine at one request per
// model (its steps overlap the other's idle moments), −4% at four per model; within noise, so the simpler one.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "tinfer/engine.h"

namespace tinfer::server {

class EngineDriver {
 public:
  explicit EngineDriver(Engine& engine) : EngineDriver(std::vector<Engine*>{&engine}) {}
  // Several engines (routing): index i is engine(i) in every call below.
  explicit EngineDriver(std::vector<Engine*> engines);
  ~EngineDriver();  // stops the thread (in-flight requests are left as they are)

  int num_engines() const { return static_cast<int>(engines_.size()); }
  Engine& engine(int i = 0) const { return *engines_.at(size_t(i)); }
  // The callback runs on the engine thread and must only hand the event over (no engine calls).
  RequestId submit(ResolvedRequest req, EventCallback cb) { return submit(0, std::move(req), std::move(cb)); }
  RequestId submit(int engine, ResolvedRequest req, EventCallback cb);
  // Aborts the engine request (its blocks return at the next step); unknown or finished ids are ignored.
  void cancel(RequestId id) { cancel(0, id); }
  void cancel(int engine, RequestId id);

  EngineStats stats(int engine = 0) const { return engines_.at(size_t(engine))->stats(); }
  void stop();

 private:
  void loop();
  void wake();

  std::vector<Engine*> engines_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t wakeups_ = 0;  // bumped on every submit/abort so the loop re-checks has_work()
  std::thread thread_;
};

}  // namespace tinfer::server

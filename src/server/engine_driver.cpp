// Engine thread: step() while there is work (each engine with work once per round), else wait for a submit or an
// abort.
#include "server/engine_driver.h"

#include <chrono>
#include <cstdio>

namespace tinfer::server {

EngineDriver::EngineDriver(std::vector<Engine*> engines) : engines_(std::move(engines)) {
  thread_ = std::thread([this] { loop(); });
}

EngineDriver::~EngineDriver() { stop(); }

void EngineDriver::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EngineDriver::wake() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    wakeups_++;
  }
  cv_.notify_all();
}

RequestId EngineDriver::submit(int engine, ResolvedRequest req, EventCallback cb) {
  const RequestId id = engines_.at(size_t(engine))->add_request(std::move(req), std::move(cb));
  wake();
  return id;
}

void EngineDriver::cancel(int engine, RequestId id) {
  engines_.at(size_t(engine))->abort(id);
  wake();
}

void EngineDriver::loop() {
  for (;;) {
    uint64_t seen = 0;
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (stop_) return;
      seen = wakeups_;  // read before has_work(), so a submit in between is not slept through
    }
    bool worked = false;
    for (Engine* engine : engines_) {
      if (!engine->has_work()) continue;
      worked = true;
      try {
        engine->step();
      } catch (const std::exception& e) {
        // A failing step must not take the server down silently; the requests in it are the
        // engine's to finish or abort.
        std::fprintf(stderr, "tinfer serve: engine step failed: %s\n", e.what());
      }
    }
    if (worked) continue;
    std::unique_lock<std::mutex> lk(mu_);
    // The timeout is a safety net only: every submit/abort bumps wakeups_ and notifies.
    cv_.wait_for(lk, std::chrono::milliseconds(50), [&] { return stop_ || wakeups_ != seen; });
  }
}

}  // namespace tinfer::server

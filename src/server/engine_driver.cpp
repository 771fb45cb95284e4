// Engine thread + long-request lane. The lane keeps long jobs (max_tokens > --long-request-tokens)
// out of the engine until it has room, so a burst of long jobs cannot occupy every batch slot and
// queue position ahead of short interactive requests.
#include "server/engine_driver.h"

#include <chrono>
#include <cstdio>

#include "core/error.h"

namespace tinfer::server {

EngineDriver::EngineDriver(Engine& engine, LaneLimits lane) : engine_(engine), lane_limits_(lane) {
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

std::shared_ptr<Ticket> EngineDriver::submit(GenerationRequest req, EventCallback cb, bool long_lane) {
  auto t = std::make_shared<Ticket>();
  if (!long_lane) {
    RequestId id = engine_.add_request(std::move(req), std::move(cb));  // may throw Error
    {
      std::lock_guard<std::mutex> lk(t->mu);
      t->id = id;
      t->in_engine = true;
    }
  } else {
    std::lock_guard<std::mutex> lk(mu_);
    lane_.push_back({t, std::move(req), std::move(cb)});
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    wakeups_++;
  }
  cv_.notify_all();
  return t;
}

void EngineDriver::cancel(const std::shared_ptr<Ticket>& t, bool long_lane) {
  RequestId id = 0;
  bool abort = false;
  {
    std::lock_guard<std::mutex> lk(t->mu);
    if (t->cancelled) return;
    t->cancelled = true;
    abort = t->in_engine;
    id = t->id;
  }
  if (abort) engine_.abort(id);
  if (long_lane) release_long(t);
  {
    std::lock_guard<std::mutex> lk(mu_);
    wakeups_++;
  }
  cv_.notify_all();
}

void EngineDriver::release_long(const std::shared_ptr<Ticket>& t) {
  std::lock_guard<std::mutex> lk(mu_);
  std::lock_guard<std::mutex> tl(t->mu);
  // Each long ticket that reached the engine holds one in-flight slot until released, once.
  if (t->in_engine && !t->released) {
    long_in_flight_--;
    t->released = true;
  }
  wakeups_++;
  cv_.notify_all();
}

int EngineDriver::lane_waiting() const {
  std::lock_guard<std::mutex> lk(mu_);
  return static_cast<int>(lane_.size());
}

void EngineDriver::pump_lane() {
  for (;;) {
    LaneEntry e;
    {
      std::lock_guard<std::mutex> lk(mu_);
      while (!lane_.empty()) {
        std::lock_guard<std::mutex> tl(lane_.front().ticket->mu);
        if (!lane_.front().ticket->cancelled) break;
        lane_.pop_front();
      }
      if (lane_.empty() || long_in_flight_ >= lane_limits_.max_in_flight) return;
      if (engine_.stats().waiting > lane_limits_.max_waiting) return;
      e = std::move(lane_.front());
      lane_.pop_front();
      long_in_flight_++;
    }
    // Lock order is mu_ -> ticket->mu everywhere; so the ticket lock is dropped before mu_ is taken.
    bool failed = false;
    {
      std::lock_guard<std::mutex> tl(e.ticket->mu);
      if (e.ticket->cancelled) {  // cancelled between the two locks
        failed = true;
      } else {
        try {
          e.ticket->id = engine_.add_request(std::move(e.req), std::move(e.cb));
          e.ticket->in_engine = true;
        } catch (const std::exception& ex) {
          e.ticket->error = ex.what();
          e.ticket->cancelled = true;
          failed = true;
        }
      }
    }
    if (failed) {
      std::lock_guard<std::mutex> lk(mu_);
      long_in_flight_--;
    }
  }
}

void EngineDriver::loop() {
  for (;;) {
    uint64_t seen = 0;
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (stop_) return;
      seen = wakeups_;  // read before has_work(), so a submit in between is not slept through
    }
    pump_lane();
    if (engine_.has_work()) {
      try {
        engine_.step();
      } catch (const std::exception& e) {
        // A failing step must not take the server down silently; the requests in it are the
        // engine's to finish or abort.
        std::fprintf(stderr, "tinfer serve: engine step failed: %s\n", e.what());
      }
      continue;
    }
    std::unique_lock<std::mutex> lk(mu_);
    // The timeout is a safety net only: every submit/abort bumps wakeups_ and notifies.
    cv_.wait_for(lk, std::chrono::milliseconds(50), [&] { return stop_ || wakeups_ != seen; });
  }
}

}  // namespace tinfer::server

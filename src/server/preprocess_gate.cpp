// PreprocessGate: a mutex, a count and a condition variable (no order among waiters: preprocessing takes
// milliseconds, so a waiter is served long before max_wait unless the gate is flooded).
#include "server/preprocess_gate.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace tinfer::server {

int preprocess_slots(int asked) {
  if (asked > 0) return asked;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

PreprocessGate::PreprocessGate(int slots, std::chrono::milliseconds max_wait, Gauges gauges, LeaveFn on_leave)
    : slots_(preprocess_slots(slots)), max_wait_(max_wait), gauges_(gauges), on_leave_(std::move(on_leave)) {}

PreprocessGate::Ticket PreprocessGate::enter(size_t bytes) {
  std::unique_lock<std::mutex> lk(mu_);
  if (active_ >= slots_) {
    add(gauges_.waiting, 1);
    const bool got = cv_.wait_for(lk, max_wait_, [&] { return active_ < slots_; });
    add(gauges_.waiting, -1);
    if (!got) return Ticket();
  }
  ++active_;
  add(gauges_.active, 1);
  return Ticket(this, bytes);
}

int PreprocessGate::active() const {
  std::lock_guard<std::mutex> lk(mu_);
  return active_;
}

void PreprocessGate::leave(size_t bytes) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    --active_;
    add(gauges_.active, -1);
  }
  cv_.notify_one();
  if (on_leave_) on_leave_(bytes);
}

PreprocessGate::Ticket& PreprocessGate::Ticket::operator=(Ticket&& o) noexcept {
  if (this != &o) {
    release();
    gate_ = o.gate_;
    bytes_ = o.bytes_;
    o.gate_ = nullptr;
  }
  return *this;
}

void PreprocessGate::Ticket::release() {
  if (gate_) std::exchange(gate_, nullptr)->leave(bytes_);
}

}  // namespace tinfer::server

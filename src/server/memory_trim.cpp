// MemoryTrimmer: one thread that sleeps until enough bytes were noted, then until the notes pause, then trims.
#include "server/memory_trim.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tinfer::server {

bool trim_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
  return true;
#else
  return false;
#endif
}

void limit_heap_arenas(int n) {
#if defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv("MALLOC_ARENA_MAX") || (tunables && std::strstr(tunables, "arena_max"))) return;
  mallopt(M_ARENA_MAX, n);
#else
  (void)n;
#endif
}

MemoryTrimmer::MemoryTrimmer(size_t threshold, ms quiet, ms max_delay, std::atomic<int64_t>* trims)
    : threshold_(threshold), quiet_(quiet), max_delay_(max_delay), trims_(trims), thread_([this] { loop(); }) {}

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MemoryTrimmer::note(size_t bytes) {
  const auto now = std::chrono::steady_clock::now();
  bool armed;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (pending_ == 0) first_ = now;
    last_ = now;
    pending_ += bytes;
    armed = pending_ >= threshold_;
  }
  if (armed) cv_.notify_one();
}

void MemoryTrimmer::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    cv_.wait(lk, [&] { return stop_ || pending_ >= threshold_; });
    // Armed: wait for a pause in the notes, or for max_delay since the first.
    while (!stop_) {
      const auto due = std::min(last_ + quiet_, first_ + max_delay_);
      if (std::chrono::steady_clock::now() >= due) break;
      cv_.wait_until(lk, due);
    }
    if (stop_) break;
    pending_ = 0;
    lk.unlock();
    if (trim_heap()) {
      ++done_;
      if (trims_) ++*trims_;
    }
    lk.lock();
  }
}

}  // namespace tinfer::server

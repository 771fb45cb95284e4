// ThreadPool: a fixed set of workers that run one parallel region at a time.
// Decode steps run dozens of short regions per token, so workers spin briefly before sleeping
// (a condition-variable wake-up alone costs tens of microseconds), and the caller runs any share
// a worker has not picked up yet instead of waiting for it (robust on an oversubscribed machine).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>  // (callers rely on it)
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/function_ref.h"

namespace tinfer {

class ThreadPool {
 public:
  // n_threads includes the calling thread; 0 = hardware concurrency.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_; }

  // Runs fn(index, n_threads) once for every index in [0, n_threads) and waits for all. Index 0 runs
  // on the caller; the others on their worker, or on the caller if that worker is late. fn must not
  // rely on which OS thread runs an index (thread_local scratch is fine, thread identity is not).
  void run(FunctionRef<void(int, int)> fn);

  // Splits [0, n) into contiguous chunks, one per thread, each a multiple of `grain` (except the last).
  void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

  // For streams read once (a decode step's weights): thread i owns the contiguous run
  // [i*n/size, (i+1)*n/size) and calls fn on it front to back in pieces of at most `item`; a thread
  // whose run is done takes pieces from the back of the others' runs, so a late or descheduled
  // worker costs only what it has not claimed. Every index is passed to fn exactly once.
  void parallel_for_runs(int64_t n, int64_t item, FunctionRef<void(int64_t, int64_t)> fn);

 private:
  // One thread's run for parallel_for_runs: front << 32 | back, so either end is claimed with one CAS.
  struct alignas(64) Run {
    std::atomic<uint64_t> front_back{0};
  };
  static bool claim(Run& r, bool front, int64_t item, int64_t& b, int64_t& e);
  void worker(int index);
  bool run_slot(int index);  // claims and runs share `index`; false if someone else claimed it
  int n_;
  std::unique_ptr<std::atomic<int>[]> slots_;
  std::unique_ptr<Run[]> runs_;
  std::vector<std::thread> threads_;
  const FunctionRef<void(int, int)>* job_ = nullptr;  // the region run() is in (its argument)
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace tinfer

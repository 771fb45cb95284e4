// ThreadPool: a fixed set of workers that run one parallel region at a time.
// Decode steps run dozens of short regions per token, so workers spin briefly before sleeping
// (a condition-variable wake-up alone costs tens of microseconds).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tinfer {

class ThreadPool {
 public:
  // n_threads includes the calling thread; 0 = hardware concurrency.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_; }

  // Runs fn(thread_index, n_threads) on every thread (the caller is thread 0) and waits for all.
  void run(const std::function<void(int, int)>& fn);

  // Splits [0, n) into contiguous chunks, one per thread, each a multiple of `grain` (except the last).
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker(int index);
  int n_;
  std::vector<std::thread> threads_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace tinfer

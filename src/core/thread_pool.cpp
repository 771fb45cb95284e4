// ThreadPool implementation: generation counter + spin-then-sleep workers.
#include "core/thread_pool.h"

#include <algorithm>

namespace tinfer {

namespace {
constexpr int kSpinIters = 20000;
inline void cpu_relax() { __builtin_ia32_pause(); }
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  n_ = n_threads > 0 ? n_threads : std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < n_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < 2 * kSpinIters; ++spin) {
      if (spin < kSpinIters) cpu_relax();
      else std::this_thread::yield();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load() != seen; });
      g = generation_.load();
    }
    seen = g;
    if (stop_.load()) return;
    (*job_)(index, n_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (n_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  pending_.store(n_ - 1, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  cv_.notify_all();
  fn(0, n_);
  // Spin briefly (the workers usually finish together with us), then yield the core: on a
  // loaded machine a worker may be waiting for exactly this core.
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpinIters) cpu_relax();
    else std::this_thread::yield();
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t units = (n + grain - 1) / grain;
  int threads = int(std::min<int64_t>(n_, units));
  if (threads <= 1) {
    fn(0, n);
    return;
  }
  run([&](int t, int) {
    if (t >= threads) return;
    int64_t u0 = units * t / threads, u1 = units * (t + 1) / threads;
    int64_t b = u0 * grain, e = std::min(n, u1 * grain);
    if (b < e) fn(b, e);
  });
}

}  // namespace tinfer

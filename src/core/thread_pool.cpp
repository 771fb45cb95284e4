// ThreadPool implementation: generation counter + spin-then-sleep workers. Each parallel region
// has one slot per thread; whoever claims a slot first (its worker, or the caller once its own
// share is done) runs it. So a worker the OS has not scheduled yet never stalls the region: the
// caller runs its share and waits only for slots that are actually executing.
#include "core/thread_pool.h"

#include <algorithm>

namespace tinfer {

namespace {
constexpr int kSpinIters = 20000;
inline void cpu_relax() { __builtin_ia32_pause(); }
enum : int { kFree = 0, kTaken = 1, kDone = 2 };
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  n_ = n_threads > 0 ? n_threads : std::max(1u, std::thread::hardware_concurrency());
  slots_ = std::make_unique<std::atomic<int>[]>(size_t(n_));
  runs_ = std::make_unique<Run[]>(size_t(n_));
  for (int i = 0; i < n_; ++i) slots_[i].store(kDone);
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

bool ThreadPool::run_slot(int index) {
  int expected = kFree;
  if (!slots_[index].compare_exchange_strong(expected, kTaken, std::memory_order_acq_rel)) return false;
  (*job_)(index, n_);
  slots_[index].store(kDone, std::memory_order_release);
  return true;
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
    run_slot(index);
  }
}

void ThreadPool::run(FunctionRef<void(int, int)> fn) {
  if (n_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  for (int i = 1; i < n_; ++i) slots_[i].store(kFree, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  cv_.notify_all();
  fn(0, n_);
  for (int i = 1; i < n_; ++i) run_slot(i);  // shares no worker has picked up yet
  for (int i = 1; i < n_; ++i)
    for (int spin = 0; slots_[i].load(std::memory_order_acquire) != kDone; ++spin) {
      if (spin < kSpinIters) cpu_relax();
      else std::this_thread::yield();
    }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
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

bool ThreadPool::claim(Run& r, bool front, int64_t item, int64_t& b, int64_t& e) {
  uint64_t v = r.front_back.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t f = int64_t(v >> 32), k = int64_t(v & 0xffffffffu);
    if (f >= k) return false;
    const int64_t take = std::min(item, k - f);
    const uint64_t nv = front ? uint64_t(f + take) << 32 | uint64_t(k) : uint64_t(f) << 32 | uint64_t(k - take);
    if (r.front_back.compare_exchange_weak(v, nv, std::memory_order_relaxed)) {
      b = front ? f : k - take;
      e = front ? f + take : k;
      return true;
    }
  }
}

void ThreadPool::parallel_for_runs(int64_t n, int64_t item, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  item = std::max<int64_t>(item, 1);
  if (n_ == 1 || n <= item) {
    fn(0, n);
    return;
  }
  for (int i = 0; i < n_; ++i) runs_[i].front_back.store(uint64_t(n * i / n_) << 32 | uint64_t(n * (i + 1) / n_));
  run([&](int index, int threads) {
    int64_t b, e;
    while (claim(runs_[index], true, item, b, e)) fn(b, e);
    for (int k = 1; k < threads; ++k)
      while (claim(runs_[(index + k) % threads], false, item, b, e)) fn(b, e);
  });
}

}  // namespace tinfer

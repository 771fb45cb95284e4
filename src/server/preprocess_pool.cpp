// PreprocessPool: a queue of jobs on their callers' stacks, taken in order by the pool's threads; a caller waits for
// its job to start (or for max_wait, then takes it back out of the queue), then for it to finish.
#include "server/preprocess_pool.h"

#include <algorithm>

namespace tinfer::server {

int preprocess_threads(int asked) {
  if (asked > 0) return asked;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

PreprocessPool::PreprocessPool(int threads, std::chrono::milliseconds max_wait, PoolGauges gauges, DoneFn on_done)
    : max_wait_(max_wait), gauges_(gauges), on_done_(std::move(on_done)) {
  const int n = preprocess_threads(threads);
  idle_ = n;  // each is available from the start, before it first reaches the queue
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
}

PreprocessPool::~PreprocessPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool PreprocessPool::run(size_t bytes, const std::function<void()>& fn) {
  Job job{&fn, bytes, nullptr};
  std::unique_lock<std::mutex> lk(mu_);
  queue_.push_back(&job);
  add(gauges_.waiting, 1);
  work_cv_.notify_one();
  // A thread is free for every queued job up to this one: it starts without waiting (also when max_wait is 0).
  const bool taken = queue_.size() <= static_cast<size_t>(idle_);
  if (taken) job_cv_.wait(lk, [&] { return job.started; });
  if (!taken && !job_cv_.wait_for(lk, max_wait_, [&] { return job.started; })) {
    queue_.erase(std::find(queue_.begin(), queue_.end(), &job));  // not started: still queued
    add(gauges_.waiting, -1);
    return false;
  }
  job_cv_.wait(lk, [&] { return job.done; });
  lk.unlock();
  if (job.error) std::rethrow_exception(job.error);
  return true;
}

// idle_ counts a thread from the moment its job is done (on_done is short): a caller that comes right after the
// answer of the one before is not refused for the time the thread takes to get back to the queue.
void PreprocessPool::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    work_cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) {  // stopping, nothing left
      --idle_;
      return;
    }
    --idle_;
    Job* job = queue_.front();
    queue_.pop_front();
    job->started = true;
    add(gauges_.waiting, -1);
    add(gauges_.active, 1);
    const size_t bytes = job->bytes;
    lk.unlock();
    job_cv_.notify_all();
    std::exception_ptr error;
    try {
      (*job->fn)();
    } catch (...) {
      error = std::current_exception();
    }
    lk.lock();
    job->error = error;
    job->done = true;  // (the caller may return, and its job go, once the lock is released)
    ++idle_;
    add(gauges_.active, -1);
    lk.unlock();
    job_cv_.notify_all();
    if (on_done_) on_done_(bytes);
    lk.lock();
  }
}

}  // namespace tinfer::server

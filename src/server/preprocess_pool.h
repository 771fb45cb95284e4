// Request preprocessing -- JSON body parsed, chat template rendered, prompt tokenized -- on a few threads of its own.
// That is the phase where a request costs memory in proportion to its body (tens of MB for a 1 MiB one) before the
// engine sees it, so it is bounded twice: at most `threads` requests are preprocessed at once (about one per core:
// the work is CPU-bound, more at once adds memory, not throughput), and the allocations happen on those threads
// only. glibc keeps what a thread frees in that thread's arena and cache, so preprocessing on whichever HTTP worker
// took the request left each of 64 workers holding a request's worth after a burst; on the pool's threads the
// memory is reused by the next request and handed back by the trimmer (memory_trim.h). vLLM likewise tokenizes on
// one executor thread.
//
//   bool ran = pool.run(body_bytes, [&] { ...parse, render, tokenize... });  // fn's exception is rethrown here
//   // ran == false: no thread took it within max_wait (the caller answers 429); fn did not run
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tinfer::server {

// The threads a pool gets when asked for `asked` (0: one per hardware thread).
int preprocess_threads(int asked);

// Where a pool's occupancy is published (Metrics' gauges); null: nowhere.
struct PoolGauges {
  std::atomic<int64_t>* active = nullptr;   // jobs running
  std::atomic<int64_t>* waiting = nullptr;  // jobs queued, not yet taken
};

class PreprocessPool {
 public:
  // Runs on the pool's thread after each job, with the bytes it was given.
  using DoneFn = std::function<void(size_t bytes)>;

  PreprocessPool(int threads, std::chrono::milliseconds max_wait, PoolGauges gauges = {}, DoneFn on_done = {});
  ~PreprocessPool();  // runs what is queued, then joins
  PreprocessPool(const PreprocessPool&) = delete;
  PreprocessPool& operator=(const PreprocessPool&) = delete;

  // Runs fn on a pool thread and returns once it has (rethrowing what it threw); false, without running it, when no
  // thread took it within max_wait.
  bool run(size_t bytes, const std::function<void()>& fn);
  int threads() const { return static_cast<int>(threads_.size()); }
  std::chrono::milliseconds max_wait() const { return max_wait_; }

 private:
  struct Job {
    const std::function<void()>* fn;
    size_t bytes;
    std::exception_ptr error;
    bool started = false, done = false;
  };
  void loop();
  static void add(std::atomic<int64_t>* g, int64_t d) {
    if (g) *g += d;
  }

  const std::chrono::milliseconds max_wait_;
  const PoolGauges gauges_;
  const DoneFn on_done_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // workers: a job was queued, or stop
  std::condition_variable job_cv_;   // callers: a job started or finished
  std::deque<Job*> queue_;           // jobs live on their callers' stacks
  int idle_ = 0;                     // threads waiting for a job
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tinfer::server

// Gives freed heap memory back to the OS after a burst of large requests. glibc keeps what a thread frees in that
// thread's arena (up to 8 arenas per core), and a request's parse trees, rendered prompt and token buffers, freed in
// pieces, stay resident: 64 requests of 1 MiB at once left the server 3 GB larger for good. malloc_trim(0) hands
// every arena's free pages back (madvise), but walks each arena under its lock, so it runs on a thread of its own,
// off the request path: once `threshold` body bytes were preprocessed since the last trim, after `quiet` with no
// more (the burst's bodies and responses are freed by then), and at most `max_delay` after the first of them.
// Without glibc it counts and does nothing.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

namespace tinfer::server {

class MemoryTrimmer {
 public:
  using ms = std::chrono::milliseconds;
  // trims: where to count the trims done (a Metrics counter); null: nowhere.
  explicit MemoryTrimmer(size_t threshold = size_t{1} << 20, ms quiet = ms(250), ms max_delay = ms(2000),
                         std::atomic<int64_t>* trims = nullptr);
  ~MemoryTrimmer();  // stops the thread (no trim then)
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  void note(size_t bytes);  // a request of this many body bytes was preprocessed
  int64_t trims() const { return done_.load(); }

 private:
  void loop();

  const size_t threshold_;
  const ms quiet_, max_delay_;
  std::atomic<int64_t>* trims_;
  std::atomic<int64_t> done_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  size_t pending_ = 0;  // bytes since the last trim
  std::chrono::steady_clock::time_point first_, last_;  // of the notes since the last trim
  bool stop_ = false;
  std::thread thread_;
};

// malloc_trim(0) where glibc has it; false when there is none.
bool trim_heap();
// Caps glibc's malloc arenas at n (M_ARENA_MAX; by default 8 per core) unless the environment sets it. Each arena a
// burst touched keeps a few pages malloc_trim cannot return: measured on 2 cores after 64 chats of 36,150 messages,
// +17 MB with the default 16 arenas, +17 MB with 8, +4 MB with 4, none with 2. Only threads that allocate for the
// first time after the call are held to it: call it before the server's threads start.
void limit_heap_arenas(int n);

}  // namespace tinfer::server

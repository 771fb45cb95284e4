// A counting gate around request preprocessing -- JSON body parsed, chat template rendered, prompt tokenized -- the
// phase where a request costs memory in proportion to its body (tens of MB for a 1 MiB one) before the engine ever
// sees it. About one slot per core: preprocessing is CPU-bound, so more at once adds memory, not throughput. A
// request that finds every slot taken waits up to max_wait for one (the caller answers 429 when none came).
//
//   Ticket t = gate.enter(body_bytes);   // t.held(): a slot; else every slot stayed taken for max_wait
//   ...parse, render, tokenize...         // ~Ticket frees the slot and reports body_bytes to on_leave
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>

namespace tinfer::server {

// The slots a gate gets when asked for `asked` (0: one per hardware thread).
int preprocess_slots(int asked);

// Where a gate's occupancy is published (Metrics' gauges); null: nowhere.
struct GateGauges {
  std::atomic<int64_t>* active = nullptr;   // tickets held
  std::atomic<int64_t>* waiting = nullptr;  // callers blocked in enter()
};

class PreprocessGate {
 public:
  using Gauges = GateGauges;
  // Runs on the leaving thread, outside the gate's lock, with the bytes the ticket was entered with.
  using LeaveFn = std::function<void(size_t bytes)>;

  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& o) noexcept : gate_(o.gate_), bytes_(o.bytes_) { o.gate_ = nullptr; }
    Ticket& operator=(Ticket&& o) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { release(); }
    bool held() const { return gate_ != nullptr; }
    void release();

   private:
    friend class PreprocessGate;
    Ticket(PreprocessGate* g, size_t bytes) : gate_(g), bytes_(bytes) {}
    PreprocessGate* gate_ = nullptr;
    size_t bytes_ = 0;
  };

  // slots >= 1; 0 means one per hardware thread.
  PreprocessGate(int slots, std::chrono::milliseconds max_wait, Gauges gauges = {}, LeaveFn on_leave = {});
  PreprocessGate(const PreprocessGate&) = delete;
  PreprocessGate& operator=(const PreprocessGate&) = delete;

  // A held ticket, or an empty one when no slot freed within max_wait.
  Ticket enter(size_t bytes);
  int slots() const { return slots_; }
  std::chrono::milliseconds max_wait() const { return max_wait_; }
  int active() const;

 private:
  void leave(size_t bytes);
  static void add(std::atomic<int64_t>* g, int64_t d) {
    if (g) *g += d;
  }

  const int slots_;
  const std::chrono::milliseconds max_wait_;
  const Gauges gauges_;
  const LeaveFn on_leave_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int active_ = 0;
};

}  // namespace tinfer::server

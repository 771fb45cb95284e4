// The steady-state step allocates nothing: every operator new in the process is counted (this executable
// replaces the global allocation functions), and a forward of the same shape as the one before it, on every
// kernel table, must not call it once. A decode-shaped batch (32 rows, the serving workload's step) and a
// prefill chunk, fused step and unfused.
// GCC 12 flags std::free in a replaced operator delete as mismatched with the replaced operator new (malloc): false.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "fused_step_batch.h"
#include "core/thread_pool.h"
#include "backend/cpu/cpu_forward.h"
#include "model/synth/synth.h"

namespace {
std::atomic<long> g_news{0};
}  // namespace

void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, std::align_val_t al) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  const std::size_t a = static_cast<std::size_t>(al);
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t al) { return operator new(n, al); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace tinfer {
namespace {

TEST(StepAlloc, CounterSeesAllocations) {  // the hook is live (else the test below proves nothing)
  const long before = g_news.load();
  void* p = ::operator new(64);  // a direct call: not a new-expression the compiler may elide
  ::operator delete(p);
  EXPECT_EQ(g_news.load() - before, 1);
}

TEST(StepAlloc, SteadyStateStepAllocatesNothing) {
  SynthSpec spec;
  spec.dim = 256, spec.n_layers = 2, spec.n_heads = 4, spec.n_kv_heads = 2, spec.ffn_dim = 512, spec.n_vocab = 300;
  spec.ctx_len = 128, spec.weight_type = DType::Q8_0, spec.seed = 3;
  auto model = Model::from_gguf_bytes(synthesize_model_bytes(spec));
  ThreadPool pool(2);
  const int seqs = 32, blocks = 2;
  for (bool fused : {true, false}) {
    CpuForward fwd(*model, pool);
    fwd.set_fused_step(fused);
    auto kv = fwd.allocate_kv(seqs * blocks, 16, KvDtype::f16);
    std::vector<float> logits(size_t(seqs * spec.n_vocab));
    // Decode: 32 rows, one per sequence, positions advancing as serving's would.
    // Warm-up: three steps, so that every worker has run every kind of work item once (the generic table's
    // attention widens f16 K/V into per-thread scratch grown on a thread's first item; which thread takes an
    // item depends on scheduling, so one warm-up step left a worker cold about one run in three).
    for (int pos = 0; pos < 3; ++pos)
      fwd.forward(forward_test::decode_batch(seqs, pos, blocks, int(spec.n_vocab), pos), *kv, logits.data());
    for (int pos = 3; pos < 6; ++pos) {
      const ForwardBatch batch = forward_test::decode_batch(seqs, pos, blocks, int(spec.n_vocab), pos);
      const long before = g_news.load();
      fwd.forward(batch, *kv, logits.data());
      EXPECT_EQ(g_news.load() - before, 0) << (fused ? "fused" : "unfused") << " decode step at position " << pos;
    }
    // Prefill: one sequence, a 24-token chunk (then the same shape again at the next positions).
    ForwardBatch pre;
    pre.block_tables = {{0, 1}};
    auto chunk = [&](int p0) {
      pre.tokens.clear(), pre.positions.clear(), pre.seq.clear(), pre.logit_rows = {23};
      for (int i = 0; i < 24; ++i) pre.tokens.push_back((i * 7 + p0) % 300), pre.positions.push_back(p0 + i), pre.seq.push_back(0);
    };
    for (int p0 : {0, 1, 2}) chunk(p0), fwd.forward(pre, *kv, logits.data());
    chunk(4);
    const long before = g_news.load();
    fwd.forward(pre, *kv, logits.data());
    EXPECT_EQ(g_news.load() - before, 0) << (fused ? "fused" : "unfused") << " prefill chunk";
  }
}

}  // namespace
}  // namespace tinfer

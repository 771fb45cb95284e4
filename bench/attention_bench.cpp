// Paged attention micro-benchmarks on TinyLlama-1.1B shapes (32 query heads, 4 kv heads, head_dim 64,
// block size 16) per kernel table: decode (one token per sequence at 640 positions, reported as KV GB/s
// read) and a causal 512-token prefill chunk, f32, f16, int8 and int4 caches. The KV cache is a plain buffer seen
// through a KvLayerView (no model types). Decode cycles through enough sequences (>= 256 MiB of blocks,
// scattered block tables) that K/V come from DRAM, as in a real decode step where the weights stream
// through the caches (TINFER_BENCH_HOT=1: one sequence, in-cache kernel speed).
// Threads: TINFER_THREADS (default 2). Run: build/bench/bench_attention --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/buffer.h"
#include "core/isa.h"
#include "core/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"
#include "kernels/kv_quant.h"

namespace tinfer {
namespace {

ThreadPool& pool() {
  static ThreadPool p(std::getenv("TINFER_THREADS") ? std::atoi(std::getenv("TINFER_THREADS")) : 2);
  return p;
}

constexpr int64_t kHeads = 32, kKvHeads = 4, kHeadDim = 64, kBlock = 16, kKvDim = kKvHeads * kHeadDim;

// A KV layer of n_blocks random blocks and n_seq sequences of len positions on a shuffled block order,
// in the byte format of kernels/kv_quant.h (written through kv_write_token: int8/int4 quantized).
struct Cache {
  Buffer buf;
  KvLayerView view;
  std::vector<std::vector<int32_t>> tables;
  Cache(KvDtype dt, int64_t n_seq, int64_t len) {
    const int64_t per_seq = (len + kBlock - 1) / kBlock, n_blocks = n_seq * per_seq;
    view = kv_layer_geometry(dt, dt, kKvHeads, kHeadDim, kBlock);
    buf = Buffer(size_t(n_blocks * (view.k_block_bytes + view.v_block_bytes)), true);
    view.k = buf.data(), view.v = buf.data() + n_blocks * view.k_block_bytes;
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> k(kKvDim), v(kKvDim);
    for (int64_t b = 0; b < n_blocks; ++b)
      for (int64_t j = 0; j < kBlock; ++j) {
        for (auto& x : k) x = nd(rng);
        for (auto& x : v) x = nd(rng);
        kv_write_token(view, kKvHeads, kHeadDim, buf.data() + b * view.k_block_bytes,
                       buf.data() + n_blocks * view.k_block_bytes + b * view.v_block_bytes, j, k.data(), v.data());
      }
    std::vector<int32_t> ids(static_cast<size_t>(n_blocks));
    for (int64_t b = 0; b < n_blocks; ++b) ids[b] = int32_t(b);
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int64_t s = 0; s < n_seq; ++s) tables.emplace_back(ids.begin() + s * per_seq, ids.begin() + (s + 1) * per_seq);
  }
};

// args: isa, kv dtype, positions (decode: context length; prefill: chunk length), prefill (0/1).
void BM_PagedAttention(benchmark::State& state) {
  const Isa isa = Isa(state.range(0));
  const KvDtype dt = KvDtype(state.range(1));
  const int64_t len = state.range(2);
  const bool prefill = state.range(3) != 0;
  if (!cpu_supports(isa)) return state.SkipWithError("ISA not supported by this CPU");
  const KernelTable& kt = kernel_table(isa);
  const int64_t kv_bytes = 2 * len * kKvHeads * kv_head_bytes(dt, kHeadDim);  // one sequence, one layer, with scales
  const int64_t n_seq = prefill || std::getenv("TINFER_BENCH_HOT") ? 1 : std::max<int64_t>(1, (int64_t(256) << 20) / kv_bytes);
  Cache cache(dt, n_seq, len);
  const int64_t n = prefill ? len : 1;
  std::vector<int32_t> positions(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) positions[i] = int32_t(prefill ? i : len - 1);
  std::vector<const int32_t*> tabs(static_cast<size_t>(n));
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> q(static_cast<size_t>(n * kHeads * kHeadDim)), out(q.size());
  for (auto& x : q) x = nd(rng);
  AttentionArgs a;
  a.kv = cache.view;
  a.n_heads = kHeads, a.n_kv_heads = kKvHeads, a.head_dim = kHeadDim;
  a.scale = 1.0f / std::sqrt(float(kHeadDim));
  a.n_tokens = n, a.positions = positions.data(), a.block_tables = tabs.data();
  a.q = q.data(), a.q_stride = kHeads * kHeadDim, a.out = out.data(), a.out_stride = kHeads * kHeadDim;
  size_t s = 0;
  for (auto _ : state) {
    std::fill(tabs.begin(), tabs.end(), cache.tables[s].data());
    paged_attention(a, pool(), kt);
    s = (s + 1) % cache.tables.size();
    benchmark::DoNotOptimize(out.data());
  }
  // Decode: KV bytes read per call. Prefill: the causal chunk reads sum_i (i + 1) positions' K and V.
  const double bytes = prefill ? double(kv_bytes) * double(len + 1) / 2 : double(kv_bytes);
  state.counters["GB/s"] =
      benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(std::string(isa_name(isa)) + " " + kv_dtype_name(dt) + (prefill ? " prefill" : " decode"));
}

void shapes(benchmark::internal::Benchmark* b) {
  for (Isa isa : {Isa::generic, Isa::avx2, Isa::avx512})
    for (KvDtype dt : {KvDtype::f32, KvDtype::f16, KvDtype::int8, KvDtype::int4}) {
      b->Args({int64_t(isa), int64_t(dt), 640, 0});
      b->Args({int64_t(isa), int64_t(dt), 512, 1});
    }
}
BENCHMARK(BM_PagedAttention)->Apply(shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace tinfer

BENCHMARK_MAIN();

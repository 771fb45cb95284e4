// The cost of one always-on operator timer (two steady_clock reads and an add), with and without the trace.
// A TinyLlama decode step runs ~330 of them (tinfer bench --profile prints calls per step).
#include <benchmark/benchmark.h>

#include "tinfer/op_profile.h"

namespace {

void BM_OpTimer(benchmark::State& state) {
  tinfer::OpProfile p;
  if (state.range(0)) p.enable_trace(size_t(1) << 24);
  for (auto _ : state) {
    tinfer::OpTimer t(&p, tinfer::Op::kNorm, 1.0, 2.0);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(p[tinfer::Op::kNorm].seconds);
}
BENCHMARK(BM_OpTimer)->Arg(0)->Arg(1)->ArgNames({"trace"});

}  // namespace

BENCHMARK_MAIN();

// Sampler micro-benchmarks: one sample() over a vocabulary of random logits (N(0, 3), a model's spread), per
// mode -- greedy, temperature alone, the OpenAI-client defaults' top_p, vLLM's common top_k + top_p, and
// min_p -- at SmolLM2's (49,152) and Qwen2.5's (151,936) vocabulary. What a sampled token costs on top of the
// forward; the engine's `sample` profile category is this plus logprobs and the grammar mask.
// Run: build/bench/bench_sampler --benchmark_min_time=0.3
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "tinfer/sampler.h"

namespace tinfer {
namespace {

struct Mode {
  const char* name;
  float temperature, top_p, min_p;
  int top_k;
};
constexpr Mode kModes[] = {
    {"greedy", 0.0f, 1.0f, 0.0f, 0},
    {"t0.7", 0.7f, 1.0f, 0.0f, 0},
    {"t0.7_top_p0.9", 0.7f, 0.9f, 0.0f, 0},
    {"t0.7_top_k40_top_p0.95", 0.7f, 0.95f, 0.0f, 40},
    {"t1_min_p0.05", 1.0f, 1.0f, 0.05f, 0},
};

void BM_Sample(benchmark::State& state) {
  const Mode& m = kModes[state.range(0)];
  const auto V = static_cast<int32_t>(state.range(1));
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(V));
  for (float& l : logits) l = nd(rng);
  SamplingParams p;
  p.temperature = m.temperature, p.top_p = m.top_p, p.min_p = m.min_p, p.top_k = m.top_k, p.seed = 1;
  Sampler s(p, V);
  for (auto _ : state) {
    const SampleResult& r = s.sample(logits.data());
    benchmark::DoNotOptimize(r.token);
    s.accept(r.token);
  }
  state.SetLabel(m.name);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Sample)->ArgsProduct({{0, 1, 2, 3, 4}, {49152, 151936}})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tinfer

BENCHMARK_MAIN();

// matmul micro-benchmarks on TinyLlama-1.1B shapes: decode (m=1, reported as weight GB/s) and
// prefill (m=512, reported as int8 GOPS = 2*rows*cols*m / s), plus a whole-model decode step.
// Threads: TINFER_THREADS (default 2). Run: build/bench/bench_matmul --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "core/thread_pool.h"
#include "kernels/act_panel.h"
#include "kernels/kernels.h"
#include "quant/type_table.h"

namespace tinfer {
namespace {

ThreadPool& pool() {
  static ThreadPool p(std::getenv("TINFER_THREADS") ? std::atoi(std::getenv("TINFER_THREADS")) : 2);
  return p;
}

// Random GGUF-layout weights without running the (slow) reference quantizer on 65M values: random
// quant bytes from a few quantized random rows, repeated; the kernels' speed does not depend on values.
PackedMatrix random_packed(DType type, int64_t rows, int64_t cols) {
  const size_t rb = row_bytes(type, cols);
  std::vector<uint8_t> seed_rows(rb * 8);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> f(static_cast<size_t>(cols));
  for (int r = 0; r < 8; ++r) {
    for (auto& v : f) v = dist(rng);
    type_traits(type).from_float(f.data(), seed_rows.data() + rb * size_t(r), cols);
  }
  std::vector<uint8_t> w(rb * size_t(rows));
  for (int64_t r = 0; r < rows; ++r) std::memcpy(w.data() + rb * size_t(r), seed_rows.data() + rb * size_t(r % 8), rb);
  return pack_matrix(type, w.data(), rows, cols);
}

std::vector<float> random_x(int64_t n) {
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = dist(rng);
  return x;
}

// One random packed matrix, or (`cycle`, unless TINFER_BENCH_HOT is set) enough copies (>= 256 MiB) that a
// loop over them reads its weights from DRAM.
std::vector<PackedMatrix> weight_copies(DType type, int64_t rows, int64_t cols, bool cycle) {
  std::vector<PackedMatrix> ws;
  ws.push_back(random_packed(type, rows, cols));
  const size_t bytes = ws[0].data.size();
  const size_t copies = cycle && !std::getenv("TINFER_BENCH_HOT") ? std::max<size_t>(1, (size_t(256) << 20) / bytes) : 1;
  while (ws.size() < copies) ws.push_back(random_packed(type, rows, cols));
  return ws;
}

// args: type, rows, cols, m. Decode shapes (m <= 64) cycle through enough copies (>= 256 MiB) that weights
// come from DRAM, as in a real decode step (TINFER_BENCH_HOT=1: one copy, to see in-cache kernel speed).
void BM_Matmul(benchmark::State& state) {
  const DType type = DType(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), m = state.range(3);
  const std::vector<PackedMatrix> ws = weight_copies(type, rows, cols, m <= 64);
  const size_t bytes = ws[0].data.size();
  const auto x = random_x(m * cols);
  std::vector<float> y(static_cast<size_t>(m * rows));
  size_t k = 0;
  for (auto _ : state) {
    matmul(ws[k], x.data(), m, y.data(), pool());
    k = (k + 1) % ws.size();
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(double(bytes), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  state.counters["GOPS"] = benchmark::Counter(2.0 * double(rows * cols * m),
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  state.SetLabel(type_traits(type).name);
}

void shapes(benchmark::internal::Benchmark* b) {
  const int64_t kShapes[][2] = {{2048, 2048}, {256, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}};
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_1})
    for (const auto& s : kShapes) b->Args({int64_t(t), s[0], s[1], 1});
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_K, DType::Q6_K}) b->Args({int64_t(t), 2048, 2048, 1});
  for (DType t : {DType::Q8_0, DType::Q4_0})
    for (const auto& s : kShapes)
      if (s[0] != 32000) b->Args({int64_t(t), s[0], s[1], 512});
  for (DType t : {DType::F32, DType::F16, DType::BF16}) b->Args({int64_t(t), 2048, 2048, 512});
  // Batched decode (continuous batching's steps): a few rows, weights still streamed from DRAM.
  for (DType t : {DType::Q8_0, DType::Q4_0})
    for (int64_t m : {4, 8, 16, 32}) b->Args({int64_t(t), 5632, 2048, m});
}
BENCHMARK(BM_Matmul)->Apply(shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();

// SmolLM2's serving shapes at m = 16, 32, 64 for each of `types` (gate/up as given: unfused for the float
// rows, fused 3072 x 576 as --quantize-on-load packs it for the quantized ones). A shape whose rows a type's
// blocks do not tile (576 columns in a 256-element K-quant) is left out: packing it throws.
void smol_shapes(benchmark::internal::Benchmark* b, std::initializer_list<DType> types, int64_t gate_up_rows) {
  const int64_t kShapes[][2] = {{576, 576}, {gate_up_rows, 576}, {576, 1536}, {49152, 576}};
  for (DType t : types)
    for (const auto& s : kShapes)
      if (s[1] % type_traits(t).block_size == 0)
        for (int64_t m : {16, 32, 64}) b->Args({int64_t(t), s[0], s[1], m});
}

// Float weights in batches on SmolLM2-135M's shapes (q/o 576x576, gate/up 1536x576, down 576x1536, the tied
// output 49152x576) at m = 16, 32, 64: the continuous-batching steps of `tinfer serve -m DIR` on a Hugging
// Face bf16 checkpoint. GOPS = 2*rows*cols*m / s. Weights cycle from DRAM as in BM_Matmul (TINFER_BENCH_HOT=1:
// one copy). A/B the float-GEMM kernels in one binary with TINFER_FLOAT_GEMM=fp32|bf16 (kernel_table.h).
void BM_SmolFloat(benchmark::State& state) { BM_Matmul(state); }
void smol_float_shapes(benchmark::internal::Benchmark* b) { smol_shapes(b, {DType::BF16, DType::F16}, 1536); }
BENCHMARK(BM_SmolFloat)->Apply(smol_float_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The same shapes and batches quantized (what `--quantize-on-load q8_0|q4_k` serves): the int8 GEMMs' batched
// steps against weights from DRAM, side by side with the float ones above.
void BM_SmolQuant(benchmark::State& state) { BM_Matmul(state); }
void smol_quant_shapes(benchmark::internal::Benchmark* b) { smol_shapes(b, {DType::Q8_0, DType::Q4_K}, 3072); }
BENCHMARK(BM_SmolQuant)->Apply(smol_quant_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The int8 GEMM alone on those shapes: activations quantized into a panel once, outside the timed loop, as the
// step's fused prologues hand them over (the profile's matmul rows; BM_SmolQuant also times the quantization).
void BM_SmolPanel(benchmark::State& state) {
  const DType type = DType(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), m = state.range(3);
  const std::vector<PackedMatrix> ws = weight_copies(type, rows, cols, true);
  const auto x = random_x(m * cols);
  ActPanel panel;
  RowPrologue p;
  p.x = x.data(), p.ldx = cols;
  prologue_quantize(active_kernels(), p, m, cols, *act_panel_corr(ws[0]), ActQuant::block32, pool(), panel);
  std::vector<float> y(static_cast<size_t>(m * rows));
  size_t k = 0;
  for (auto _ : state) {
    matmul(ws[k], panel, y.data(), pool(), active_kernels(), nullptr, Op::kMatmulQkv);
    k = (k + 1) % ws.size();
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GOPS"] = benchmark::Counter(2.0 * double(rows * cols * m),
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  state.SetLabel(type_traits(type).name);
}
void smol_panel_shapes(benchmark::internal::Benchmark* b) {
  smol_shapes(b, {DType::Q8_0, DType::Q4_1, DType::Q4_K}, 3072);
  for (int64_t m : {16, 32, 64}) b->Args({int64_t(DType::Q8_0), 5632, 2048, m});  // TinyLlama's gate (1.1B)
}
BENCHMARK(BM_SmolPanel)->Apply(smol_panel_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Every packed type's kernel in cache: decode (m=1) on a 512 x 2048 matrix (0.2-1.1 MB: L2) reported as weight
// GB/s, i.e. the compute throughput a type's GEMV reaches when memory is no limit (compare with the read
// bandwidth per thread the host's memory can feed); and prefill (m=512) on 2048 x 2048 as int8 GOPS.
// Run one thread for per-core figures: TINFER_THREADS=1 build/bench/bench_matmul --benchmark_filter=Hot
void BM_HotGemv(benchmark::State& state) {
  const DType type = DType(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), m = state.range(3);
  const PackedMatrix w = random_packed(type, rows, cols);
  const auto x = random_x(m * cols);
  std::vector<float> y(static_cast<size_t>(m * rows));
  for (auto _ : state) {
    matmul(w, x.data(), m, y.data(), pool());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(double(w.data.size()), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  state.counters["GOPS"] = benchmark::Counter(2.0 * double(rows * cols * m),
                                              benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  state.SetLabel(type_traits(type).name);
}
void hot_shapes(benchmark::internal::Benchmark* b) {
  const DType kTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                          DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};
  for (DType t : kTypes) b->Args({int64_t(t), 512, 2048, 1});
  for (DType t : kTypes) b->Args({int64_t(t), 2048, 2048, 512});
}
BENCHMARK(BM_HotGemv)->Apply(hot_shapes)->Unit(benchmark::kMicrosecond)->UseRealTime();

// A whole TinyLlama decode step: 22 layers of q,k,v,o,gate,up,down + the output matrix, for m token rows
// (m = 1: plain decode; m = K + 1: a speculative verify step of K drafted tokens, weights part only).
// Four distinct layers are cycled (~180 MiB for Q8_0) so weights stream from DRAM.
void BM_DecodeStep(benchmark::State& state) {
  const DType type = DType(state.range(0));
  const int64_t m = state.range(1);
  const int64_t kLayer[][2] = {{2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048},
                               {5632, 2048}, {5632, 2048}, {2048, 5632}};
  std::vector<std::vector<PackedMatrix>> layers(4);
  size_t bytes = 0;
  for (auto& l : layers)
    for (const auto& s : kLayer) l.push_back(random_packed(type, s[0], s[1]));
  for (auto& w : layers[0]) bytes += w.data.size() * 22;
  const PackedMatrix out = random_packed(type, 32000, 2048);
  bytes += out.data.size();
  const auto x = random_x(5632 * m);
  std::vector<float> y(size_t(32000 * m));
  for (auto _ : state) {
    for (int l = 0; l < 22; ++l)
      for (auto& w : layers[size_t(l % 4)]) matmul(w, x.data(), m, y.data(), pool());
    matmul(out, x.data(), m, y.data(), pool());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["tok/s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] = benchmark::Counter(double(bytes), benchmark::Counter::kIsIterationInvariantRate,
                                              benchmark::Counter::kIs1000);
  state.SetLabel(type_traits(type).name);
}
void decode_steps(benchmark::internal::Benchmark* b) {
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::F16})
    for (int64_t m : {1, 2, 3, 5, 9}) b->Args({int64_t(t), m});
}
BENCHMARK(BM_DecodeStep)->Apply(decode_steps)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tinfer

BENCHMARK_MAIN();

// Roofline probes. Each kernel is compiled for its ISA with a target attribute and chosen at run time
// (active_isa(), so TINFER_ISA=avx2 measures the AVX2 path). Compute probes run independent chains,
// more than FMA/VNNI latency x issue width, so throughput rather than latency is measured.
#include "core/roofline.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/buffer.h"
#include "core/isa.h"
#include "core/thread_pool.h"
#include "core/timer.h"

namespace tinfer {
namespace {

// Hides a value from the optimiser so loop-invariant work is redone every iteration.
#define TINFER_OPAQUE(x) asm volatile("" : "+v"(x))

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ---- streaming reads: sum 64-bit lanes of [p, p + n), n a multiple of 256 ----

__attribute__((target("avx512f"))) uint64_t read_avx512(const uint8_t* p, size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 256) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
  }
  // Plain stores instead of _mm512_reduce_*: GCC 12 warns (-Wuninitialized) inside those intrinsics.
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  uint64_t s = 0;
  for (uint64_t x : lanes) s += x;
  return s;
}

__attribute__((target("avx2"))) uint64_t read_avx2(const uint8_t* p, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < n; i += 128) {
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

uint64_t read_generic(const uint8_t* p, size_t n) {
  const uint64_t* q = reinterpret_cast<const uint64_t*>(p);
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i < n / 8; i += 4) s0 += q[i], s1 += q[i + 1], s2 += q[i + 2], s3 += q[i + 3];
  return s0 + s1 + s2 + s3;
}

// ---- fp32 FMA chains: returns a checksum; ops per iteration in the table below ----

constexpr int kFmaChains = 12;  // Zen4/SKX: latency 4 x up to 2 FMA/cycle = 8 in flight, plus slack

__attribute__((target("avx512f"))) double fma_avx512(int64_t iters) {
  __m512 acc[kFmaChains];
  for (int j = 0; j < kFmaChains; ++j) acc[j] = _mm512_set1_ps(0.001f * float(j));
  __m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kFmaChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], b, c);
  }
  alignas(64) float lanes[16];
  for (int j = 1; j < kFmaChains; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  _mm512_store_ps(lanes, acc[0]);
  double s = 0;
  for (float x : lanes) s += x;
  return s;
}

__attribute__((target("avx2,fma"))) double fma_avx2(int64_t iters) {
  __m256 acc[kFmaChains];
  for (int j = 0; j < kFmaChains; ++j) acc[j] = _mm256_set1_ps(0.001f * float(j));
  __m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kFmaChains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], b, c);
  }
  alignas(32) float lanes[8];
  for (int j = 1; j < kFmaChains; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
  _mm256_store_ps(lanes, acc[0]);
  double s = 0;
  for (float x : lanes) s += x;
  return s;
}

double fma_generic(int64_t iters) {
  float acc[kFmaChains * 4];  // the compiler may vectorise this with SSE
  for (int j = 0; j < kFmaChains * 4; ++j) acc[j] = 0.001f * float(j);
  for (int64_t i = 0; i < iters; ++i)
    for (int j = 0; j < kFmaChains * 4; ++j) acc[j] = acc[j] * 0.9999999f + 1e-7f;
  double s = 0;
  for (float x : acc) s += x;
  return s;
}

// ---- int8 dot chains: u8 x s8 multiply-accumulate into int32 ----

constexpr int kDotChains = 12;

__attribute__((target("avx512f,avx512vnni"))) double dot_vnni(int64_t iters) {
  __m512i acc[kDotChains];
  for (int j = 0; j < kDotChains; ++j) acc[j] = _mm512_set1_epi32(j);
  __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int64_t i = 0; i < iters; ++i) {
    TINFER_OPAQUE(a);
#pragma GCC unroll 12
    for (int j = 0; j < kDotChains; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
  }
  alignas(64) int32_t lanes[16];
  for (int j = 1; j < kDotChains; ++j) acc[0] = _mm512_add_epi32(acc[0], acc[j]);
  _mm512_store_si512(lanes, acc[0]);
  double s = 0;
  for (int32_t x : lanes) s += x;
  return s;
}

// Without VNNI an int8 dot is vpmaddubsw (u8*s8 pairs -> s16) + vpmaddwd by ones (-> s32) + vpaddd.
__attribute__((target("avx2"))) double dot_avx2(int64_t iters) {
  __m256i acc[kDotChains];
  for (int j = 0; j < kDotChains; ++j) acc[j] = _mm256_set1_epi32(j);
  __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < iters; ++i) {
    TINFER_OPAQUE(a);
#pragma GCC unroll 12
    for (int j = 0; j < kDotChains; ++j)
      acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
  }
  alignas(32) int32_t lanes[8];
  for (int j = 1; j < kDotChains; ++j) acc[0] = _mm256_add_epi32(acc[0], acc[j]);
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc[0]);
  double s = 0;
  for (int32_t x : lanes) s += x;
  return s;
}

double dot_generic(int64_t iters) {
  int32_t acc[64] = {};
  uint8_t a[64];
  int8_t b[64];
  for (int j = 0; j < 64; ++j) a[j] = uint8_t(j), b[j] = int8_t(j - 32);
  for (int64_t i = 0; i < iters; ++i) {
    for (int j = 0; j < 64; ++j) acc[j] += int32_t(a[j]) * int32_t(b[j]);
    a[i & 63] ^= 1;  // keeps the products from being hoisted
  }
  double s = 0;
  for (int32_t x : acc) s += x;
  return s;
}

struct ComputeKernel {
  double (*fn)(int64_t iters);
  double ops_per_iter;  // per thread
};

ComputeKernel fp32_kernel(Isa isa) {
  switch (isa) {
    case Isa::avx512: return {fma_avx512, kFmaChains * 16 * 2.0};
    case Isa::avx2: return {fma_avx2, kFmaChains * 8 * 2.0};
    default: return {fma_generic, kFmaChains * 4 * 2.0};
  }
}

ComputeKernel int8_kernel(Isa isa) {
  switch (isa) {
    case Isa::avx512: return {dot_vnni, kDotChains * 64 * 2.0};
    case Isa::avx2: return {dot_avx2, kDotChains * 32 * 2.0};
    default: return {dot_generic, 64 * 2.0};
  }
}

// Runs `k` on every thread: calibrates the iteration count (which also lets clocks ramp), then takes
// the median rate of 5 timed repetitions that together last about `seconds`.
double measure_compute(ThreadPool& pool, ComputeKernel k, double seconds) {
  std::vector<double> sink(pool.size());
  auto timed = [&](int64_t iters) {
    const double t0 = now_s();
    pool.run([&](int t, int) { sink[t] += k.fn(iters); });
    return now_s() - t0;
  };
  int64_t iters = 1 << 12;
  double dt = timed(iters);
  while (dt < 0.01) {
    iters *= 2;
    dt = timed(iters);
  }
  constexpr int kReps = 5;
  const int64_t rep_iters = std::max<int64_t>(1, int64_t(double(iters) * (seconds / kReps) / dt));
  std::vector<double> rates;
  for (int r = 0; r < kReps; ++r)
    rates.push_back(double(rep_iters) * k.ops_per_iter * pool.size() / timed(rep_iters) * 1e-9);
  volatile double keep = 0;
  for (double s : sink) keep = keep + s;
  return median(rates);
}

double read_gbps_for(Isa isa, ThreadPool& pool, size_t bytes, int passes, bool huge_pages, double* huge_fraction) {
  auto read = isa == Isa::avx512 ? read_avx512 : isa == Isa::avx2 ? read_avx2 : read_generic;
  const int n = pool.size();
  const size_t per = bytes / size_t(n) / 256 * 256;  // each thread streams its own contiguous slice
  Buffer buf(per * size_t(n), huge_pages);
  // Write every page from the thread that will read it: untouched anonymous memory reads as the shared
  // zero page (cache-resident, a wildly optimistic number), and first touch places the pages.
  pool.run([&](int t, int) { std::memset(buf.data() + per * size_t(t), 1 + t, per); });
  if (huge_fraction) {
    const long long hp = huge_page_bytes(buf.data(), buf.size());
    *huge_fraction = hp < 0 ? -1.0 : double(hp) / double(buf.size());
  }
  std::vector<uint64_t> sink(n);
  auto pass = [&] {
    const double t0 = now_s();
    pool.run([&](int t, int) { sink[t] += read(buf.data() + per * size_t(t), per); });
    return now_s() - t0;
  };
  pass();  // warm-up: TLB, prefetchers, clocks
  std::vector<double> rates;
  for (int p = 0; p < std::max(1, passes); ++p) rates.push_back(double(per) * n / pass() * 1e-9);
  volatile uint64_t keep = 0;
  for (uint64_t s : sink) keep = keep + s;
  return median(rates);
}

}  // namespace

double measure_read_gbps(ThreadPool& pool, size_t bytes, int passes, bool huge_pages, double* huge_fraction) {
  return read_gbps_for(active_isa(), pool, bytes, passes, huge_pages, huge_fraction);
}

double measure_fp32_gflops(ThreadPool& pool, double seconds) {
  return measure_compute(pool, fp32_kernel(active_isa()), seconds);
}

double measure_int8_gops(ThreadPool& pool, double seconds) {
  return measure_compute(pool, int8_kernel(active_isa()), seconds);
}

Roofline measure_roofline(ThreadPool& pool, const RooflineOptions& opt) {
  Roofline r;
  r.n_threads = pool.size();
  const Isa isa = opt.isa >= 0 ? Isa(opt.isa) : active_isa();
  r.isa = isa_name(isa);
  r.read_gbps = read_gbps_for(isa, pool, opt.read_bytes, opt.read_passes, opt.huge_pages, &r.huge_page_fraction);
  r.fp32_gflops = measure_compute(pool, fp32_kernel(isa), opt.compute_seconds);
  r.int8_gops = measure_compute(pool, int8_kernel(isa), opt.compute_seconds);
  return r;
}

Roofline measure_roofline(int n_threads, const RooflineOptions& opt) {
  ThreadPool pool(n_threads);
  return measure_roofline(pool, opt);
}

}  // namespace tinfer

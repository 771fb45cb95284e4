// matmul: quantizes the activations once per call into reusable scratch (or takes a panel quantized once for
// several GEMMs, act_panel.h), then splits the packed weight tiles over the thread pool (and blocks over
// activation rows so they stay in cache).
// Float weights (F32, F16, BF16) skip the quantization and run the table's register-tiled fp32 GEMM;
// batched BF16 weights round the activations to bf16 once per call instead and run the table's bf16
// dot-product GEMM where it has one (KernelTable::bf16_gemm).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "tinfer/error.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "kernels/act_panel.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"
#include "kernels/packed_format.h"
#include "quant/type_table.h"

namespace tinfer {

namespace {

// Runs fn(u0, u1, i0, i1) over weight units [0, nu) (16 rows each) x activation rows [0, m).
// Work items hold an even number of units: the AVX-512 int8 GEMM takes tiles in pairs for batches (one
// activation broadcast feeds both tiles' dots), and an odd item leaves a tile to the one-tile loop.
template <class Fn>
void split_work(int64_t nu, int64_t m, ThreadPool& pool, const Fn& fn) {
  auto even = [](int64_t k) { return k + (k & 1); };
  const int64_t n_ic = (m + kMaxGemmRows - 1) / kMaxGemmRows;
  if (n_ic == 1) {
    // Decode streams every weight byte from DRAM once, so each thread reads one long contiguous run:
    // measured on this host, interleaving ~280 KB items between two threads lost 15% of the read
    // bandwidth; 2 MB runs lose nothing.
    pool.parallel_for_runs(nu, even(std::max<int64_t>(1, nu / (16 * pool.size()))),
                           [&](int64_t u0, int64_t u1) { fn(u0, u1, 0, m); });
    return;
  }
  // Prefill: work items are (activation chunk, unit chunk) pairs handed out dynamically, activation-chunk
  // major (both threads share the L2/L3-resident activation chunk): a late or descheduled worker then
  // costs only its unclaimed items instead of stalling a static share of the matrix.
  const int64_t tc = even(std::max<int64_t>(1, nu / (8 * pool.size()))), n_tc = (nu + tc - 1) / tc;
  std::atomic<int64_t> next{0};
  auto work = [&](int, int) {
    for (int64_t item = next.fetch_add(1); item < n_ic * n_tc; item = next.fetch_add(1)) {
      const int64_t i0 = (item / n_tc) * kMaxGemmRows, t0 = (item % n_tc) * tc;
      fn(t0, std::min(nu, t0 + tc), i0, std::min(m, i0 + kMaxGemmRows));
    }
  };
  pool.run(work);
}

// The int8 GEMM over a panel already quantized for its format.
void gemm_on_panel(const PackedMatrix& w, const packed::PackedFormat& pf, const ActPanel& acts, float* y,
                   ThreadPool& pool, const KernelTable& kt, OpProfile* prof, Op role) {
  const int64_t m = acts.rows();
  OpTimer t(prof, role, double(w.data.size()), 2.0 * double(m) * double(w.rows) * double(w.cols));
  GemmArgs g;
  g.w = w.data.data();
  g.tile_bytes = pf.g.tile_bytes(w.cols / pf.g.block);
  g.rows = w.rows;
  g.a = acts.view();
  g.y = y;
  g.ldy = w.rows;
  const GemmFn fn = kt.gemm[size_t(pf.fmt)];
  split_work(packed::n_tiles(w.rows), m, pool, [&](int64_t t0, int64_t t1, int64_t i0, int64_t i1) { fn(g, t0, t1, i0, i1); });
}

// Batched BF16 weights with bf16 activations requested (kt.bf16_round_acts): x [m][cols] rounded to bf16
// once into this thread's reusable panel (rows padded to 32 with zeros), shared by every worker; returns
// the GEMM to run. With the table's dot-product GEMM the panel is its input (g.xb); without one
// (TINFER_FLOAT_GEMM=bf16 on a CPU lacking AVX512-BF16) the rounded values are widened back to fp32 and
// float_gemm runs on them: the same numbers up to summation order.
FloatGemmFn bf16_acts(const KernelTable& kt, const float* x, int64_t m, int64_t cols, ThreadPool& pool,
                      FloatGemmArgs& g) {
  thread_local std::vector<uint16_t> xb;
  thread_local std::vector<float> xf;
  const int64_t ld = (cols + 31) / 32 * 32;
  if (int64_t(xb.size()) < m * ld) xb.resize(size_t(m * ld));
  uint16_t* panel = xb.data();
  auto rows = [&](int64_t i0, int64_t i1) { kt.bf16_round_acts(x, cols, i0, i1, panel, ld); };
  if (m * cols >= (1 << 16)) pool.parallel_for(m, 1, rows);
  else rows(0, m);
  if (kt.bf16_gemm) {
    g.xb = panel;
    g.ldxb = ld;
    return kt.bf16_gemm;
  }
  if (int64_t(xf.size()) < m * cols) xf.resize(size_t(m * cols));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t c = 0; c < cols; ++c) xf[size_t(i * cols + c)] = bf16_to_f32(panel[i * ld + c]);
  g.x = xf.data();
  return kt.float_gemm;
}

// Quantizes the activations into this calling thread's panel (grown on demand, then reused: no allocation
// per token after warm-up), then runs the GEMM on it.
void matmul_tiled(const PackedMatrix& w, const packed::PackedFormat& pf, const float* x, int64_t m, float* y,
                  ThreadPool& pool, const KernelTable& kt, OpProfile* prof, Op role, ActQuant act) {
  thread_local ActPanel panel;
  RowPrologue p;
  p.x = x, p.ldx = w.cols;
  prologue_quantize(kt, p, m, w.cols, pf.g.corr, act, pool, panel, prof);
  gemm_on_panel(w, pf, panel, y, pool, kt, prof, role);
}

// Float weights (F32/F16/BF16 rows): no activation quantization; units of 16 rows as for the tiles.
void matmul_float(const PackedMatrix& w, const float* x, int64_t m, float* y, ThreadPool& pool,
                  const KernelTable& kt, OpProfile* prof, Op role) {
  FloatGemmArgs g;
  g.type = w.type;
  g.w = w.data.data();
  g.row_bytes = int64_t(row_bytes(w.type, w.cols));
  g.cols = w.cols;
  g.x = x;
  g.y = y;
  g.ldy = w.rows;
  if (w.type != DType::F32 && w.type != DType::F16 && w.type != DType::BF16)
    fail(std::string("matmul: unsupported weight type ") + type_traits(w.type).name);
  FloatGemmFn fn = kt.float_gemm;
  if (w.type == DType::BF16 && m > 1 && kt.bf16_round_acts) {
    OpTimer t(prof, Op::kActQuant, double(m * w.cols) * 4, double(m * w.cols) * 2);
    fn = bf16_acts(kt, x, m, w.cols, pool, g);
  }
  OpTimer t(prof, role, double(w.data.size()), 2.0 * double(m) * double(w.rows) * double(w.cols));
  const int64_t nu = packed::n_tiles(w.rows);
  split_work(nu, m, pool, [&](int64_t u0, int64_t u1, int64_t i0, int64_t i1) {
    fn(g, u0 * packed::kTileRows, std::min(w.rows, u1 * packed::kTileRows), i0, i1);
  });
}

}  // namespace

void matmul(const PackedMatrix& w, const ActPanel& acts, float* y, ThreadPool& pool, const KernelTable& kt,
            OpProfile* prof, Op role) {
  const packed::PackedFormat* pf = packed::find_format(w.type);
  if (!pf) fail(std::string("matmul: a quantized activation panel needs quantized weights, not ") + type_traits(w.type).name);
  check(acts.cols() == w.cols && acts.corr() == pf->g.corr,
        "matmul: the activation panel was made for another shape or packed format");
  gemm_on_panel(w, *pf, acts, y, pool, kt, prof, role);
}

void matmul(const PackedMatrix& w, const float* x, int64_t m, float* y, ThreadPool& pool, const KernelTable& kt,
            OpProfile* prof, Op role, ActQuant act) {
  if (m <= 0) return;
  if (const packed::PackedFormat* pf = packed::find_format(w.type))
    return matmul_tiled(w, *pf, x, m, y, pool, kt, prof, role, act);
  matmul_float(w, x, m, y, pool, kt, prof, role);
}

void matmul(const PackedMatrix& w, const float* x, int64_t m, float* y, ThreadPool& pool, OpProfile* prof, Op role,
            ActQuant act) {
  matmul(w, x, m, y, pool, active_kernels(), prof, role, act);
}

void matmul(const PackedMatrix& w, const float* x, int64_t m, float* y, ThreadPool& pool) {
  matmul(w, x, m, y, pool, active_kernels());
}

}  // namespace tinfer

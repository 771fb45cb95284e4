// matmul: quantizes the activations once per call into reusable scratch, then splits the packed
// weight tiles over the thread pool (and blocks over activation rows so they stay in cache).
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
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"
#include "kernels/packed_format.h"
#include "quant/type_table.h"

namespace tinfer {

namespace {

// Per calling thread, grown on demand and then reused: no allocation per token after warm-up.
struct ActScratch {
  std::vector<uint8_t> panel;  // QActs layout (kernel_table.h)
};

// Quantizes x [m][cols] into the activation panel; corr is the packed codes' offset (Geometry::corr).
QActs quantize_acts(const KernelTable& kt, const float* x, int64_t m, int64_t cols, int32_t corr, ActQuant mode,
                    ThreadPool& pool) {
  thread_local ActScratch s;
  const int64_t nb = cols / 32, groups = (m + kActGroup - 1) / kActGroup;
  const int gr = int(std::min<int64_t>(m, kActGroup));
  const size_t bytes = size_t(groups * nb * act_block_bytes(gr));
  if (s.panel.size() < bytes) s.panel.resize(bytes);
  uint8_t* panel = s.panel.data();
  QActs a;
  a.panel = panel;
  a.nb = nb;
  a.gr = gr;
  auto rows = [&](int64_t g0, int64_t g1) {
    thread_local std::vector<int8_t> q;
    thread_local std::vector<float> d;
    thread_local std::vector<int16_t> s16;
    if (int64_t(q.size()) < cols) q.resize(size_t(cols));
    if (int64_t(d.size()) < nb) d.resize(size_t(nb)), s16.resize(size_t(2 * nb));
    for (int64_t i = g0 * kActGroup; i < g1 * kActGroup; ++i) {
      const int r = int(i % kActGroup);
      if (r >= gr) break;  // (only a single short group stores fewer rows)
      const bool live = i < m;  // padded rows of the last group are zeros
      if (live) kt.quantize_act_row(x + i * cols, cols, mode, q.data(), d.data(), s16.data());
      for (int64_t b = 0; b < nb; ++b) {
        // Written through QActs' own accessors (the panel is this function's scratch), so the layout
        // is stated once.
        const uint8_t* blk = a.block(i / kActGroup, b);
        auto* qr = const_cast<int8_t*>(a.q(blk, r));
        auto* sr = const_cast<int16_t*>(a.s16(blk, r));
        if (!live) {
          std::memset(qr, 0, 32);
          *const_cast<float*>(a.d(blk, r)) = 0.0f;
          *const_cast<float*>(a.ds(blk, r)) = 0.0f;
          *const_cast<int32_t*>(a.off(blk, r)) = 0;
          sr[0] = sr[1] = 0;
          continue;
        }
        std::memcpy(qr, q.data() + b * 32, 32);
        const float db = d[size_t(b)];
        const int32_t sum = int32_t(s16[size_t(2 * b)]) + s16[size_t(2 * b + 1)];
        *const_cast<float*>(a.d(blk, r)) = db;
        *const_cast<float*>(a.ds(blk, r)) = db * float(sum);
        *const_cast<int32_t*>(a.off(blk, r)) = corr * sum;
        sr[0] = s16[size_t(2 * b)];
        sr[1] = s16[size_t(2 * b + 1)];
      }
    }
  };
  if (m * cols >= (1 << 16)) pool.parallel_for(groups, 1, rows);
  else rows(0, groups);
  return a;
}

// Runs fn(u0, u1, i0, i1) over weight units [0, nu) (16 rows each) x activation rows [0, m).
template <class Fn>
void split_work(int64_t nu, int64_t m, ThreadPool& pool, const Fn& fn) {
  const int64_t n_ic = (m + kMaxGemmRows - 1) / kMaxGemmRows;
  if (n_ic == 1) {
    // Decode streams every weight byte from DRAM once, so each thread reads one long contiguous run:
    // measured on this host, interleaving ~280 KB items between two threads lost 15% of the read
    // bandwidth; 2 MB runs lose nothing.
    pool.parallel_for_runs(nu, std::max<int64_t>(1, nu / (16 * pool.size())),
                           [&](int64_t u0, int64_t u1) { fn(u0, u1, 0, m); });
    return;
  }
  // Prefill: work items are (activation chunk, unit chunk) pairs handed out dynamically, activation-chunk
  // major (both threads share the L2/L3-resident activation chunk): a late or descheduled worker then
  // costs only its unclaimed items instead of stalling a static share of the matrix.
  const int64_t tc = std::max<int64_t>(1, nu / (8 * pool.size())), n_tc = (nu + tc - 1) / tc;
  std::atomic<int64_t> next{0};
  auto work = [&](int, int) {
    for (int64_t item = next.fetch_add(1); item < n_ic * n_tc; item = next.fetch_add(1)) {
      const int64_t i0 = (item / n_tc) * kMaxGemmRows, t0 = (item % n_tc) * tc;
      fn(t0, std::min(nu, t0 + tc), i0, std::min(m, i0 + kMaxGemmRows));
    }
  };
  pool.run(work);
}

void matmul_tiled(const PackedMatrix& w, const packed::PackedFormat& pf, const float* x, int64_t m, float* y,
                  ThreadPool& pool, const KernelTable& kt, OpProfile* prof, Op role, ActQuant act) {
  GemmArgs g;
  g.w = w.data.data();
  g.tile_bytes = pf.g.tile_bytes(w.cols / pf.g.block);
  g.rows = w.rows;
  {
    OpTimer t(prof, Op::kActQuant, double(m * w.cols) * 4, double(m * w.cols) * 2);
    g.a = quantize_acts(kt, x, m, w.cols, pf.g.corr, act, pool);
  }
  OpTimer t(prof, role, double(w.data.size()), 2.0 * double(m) * double(w.rows) * double(w.cols));
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
  check(w.type == DType::F32 || w.type == DType::F16 || w.type == DType::BF16,
        std::string("matmul: unsupported weight type ") + type_traits(w.type).name);
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

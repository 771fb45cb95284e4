// matmul: quantizes the activations once per call into reusable scratch, then splits the packed
// weight tiles over the thread pool (and blocks over activation rows so they stay in cache).
// Float types and K-quants take a simpler path: each weight row dequantized once, fp32 dots.
#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"
#include "kernels/packed_layout.h"
#include "quant/type_table.h"

namespace tinfer {

namespace {

constexpr int64_t kActChunk = 64;  // activation rows per pass over a thread's tiles (~L2 resident)

// Per calling thread, grown on demand and then reused: no allocation per token after warm-up.
struct ActScratch {
  std::vector<int8_t> q;
  std::vector<float> d, ds;
  std::vector<int32_t> sum, off;
};

// corr: the packed weights' per-q offset (Q8_0 stores q + 128, Q4_0 stores q + 8), removed via off.
QActs quantize_acts(const KernelTable& kt, const float* x, int64_t m, int64_t cols, int32_t corr, ThreadPool& pool) {
  thread_local ActScratch s;
  const int64_t nb = cols / 32;
  if (int64_t(s.q.size()) < m * cols) s.q.resize(size_t(m * cols));
  if (int64_t(s.d.size()) < m * nb) {
    s.d.resize(size_t(m * nb));
    s.ds.resize(size_t(m * nb));
    s.sum.resize(size_t(m * nb));
    s.off.resize(size_t(m * nb));
  }
  auto rows = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      kt.quantize_act_row(x + i * cols, cols, s.q.data() + i * cols, s.d.data() + i * nb, s.sum.data() + i * nb,
                          s.ds.data() + i * nb);
      for (int64_t b = i * nb; b < (i + 1) * nb; ++b) s.off[size_t(b)] = corr * s.sum[size_t(b)];
    }
  };
  if (m * cols >= (1 << 16)) pool.parallel_for(m, 1, rows);
  else rows(0, m);
  QActs a;
  a.q = s.q.data();
  a.d = s.d.data();
  a.sum = s.sum.data();
  a.ds = s.ds.data();
  a.off = s.off.data();
  a.ldq = cols;
  a.nb = nb;
  return a;
}

void matmul_tiled(const PackedMatrix& w, const float* x, int64_t m, float* y, ThreadPool& pool,
                  const KernelTable& kt) {
  GemmArgs g;
  g.w = w.data.data();
  g.tile_bytes = packed::tile_bytes(w.type, w.cols / 32);
  g.quant_offset = packed::scale_region_bytes(w.type, w.cols / 32);
  g.rows = w.rows;
  g.a = quantize_acts(kt, x, m, w.cols, w.type == DType::Q8_0 ? -128 : w.type == DType::Q4_0 ? -8 : 0, pool);
  g.y = y;
  g.ldy = w.rows;
  const GemmFn fn = w.type == DType::Q8_0 ? kt.gemm_q8_0 : w.type == DType::Q4_0 ? kt.gemm_q4_0 : kt.gemm_q4_1;
  pool.parallel_for(packed::n_tiles(w.rows), 1, [&](int64_t t0, int64_t t1) {
    for (int64_t i = 0; i < m; i += kActChunk) fn(g, t0, t1, i, std::min(m, i + kActChunk));
  });
}

void matmul_rows(const PackedMatrix& w, const float* x, int64_t m, float* y, ThreadPool& pool,
                 const KernelTable& kt) {
  const size_t rb = row_bytes(w.type, w.cols);
  const auto to_float = type_traits(w.type).to_float;
  pool.parallel_for(w.rows, 16, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> row;
    if (int64_t(row.size()) < w.cols) row.resize(size_t(w.cols));
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* src = w.data.data() + rb * size_t(r);
      const float* wr = reinterpret_cast<const float*>(src);
      if (w.type != DType::F32) {
        to_float(src, row.data(), w.cols);
        wr = row.data();
      }
      for (int64_t i = 0; i < m; ++i) y[i * w.rows + r] = kt.dot_f32(wr, x + i * w.cols, w.cols);
    }
  });
}

}  // namespace

void matmul(const PackedMatrix& w, const float* x, int64_t m, float* y, ThreadPool& pool, const KernelTable& kt) {
  if (m <= 0) return;
  if (packed::is_tiled(w.type)) matmul_tiled(w, x, m, y, pool, kt);
  else matmul_rows(w, x, m, y, pool, kt);
}

void matmul(const PackedMatrix& w, const float* x, int64_t m, float* y, ThreadPool& pool) {
  matmul(w, x, m, y, pool, active_kernels());
}

}  // namespace tinfer

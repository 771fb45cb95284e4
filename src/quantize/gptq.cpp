// GPTQ onto the type's own grid. Rows are independent given the Hessian factor, so the matrix is cut into
// tiles of rows, each tile run through every column by one thread:
//   - a (super-)block's scales are fitted (importance-weighted, importance = activation energy) on the
//     tile's error-updated weights when its first column is reached; the lazy-update block is a multiple
//     of the type block, so those columns have every update from the columns before them;
//   - with act_order the columns go in order of decreasing diag(H) and all block scales are fitted up front
//     on the original weights ("static groups": the grid is per contiguous block of a row);
//   - with opts.clip, that fit is the clip search of fit_block_clipped under the block's part of X^T X;
//   - each column is snapped to its grid, its error divided by U[i][i] is spread over the rest of the
//     lazy block at once and over the columns after it per lazy block (U^T U = H^-1, upper).
#include <atomic>
#include <numeric>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "quantize/grid_quant.h"
#include "quantize/linalg.h"

namespace tinfer {
namespace quantize_detail {

namespace {

constexpr int64_t kTileRows = 8;

// The Hessian after damping, as GPTQ consumes it (the factor 2 of 2 X^T X cancels out): hp = H permuted into
// processing order, u its upper inverse Cholesky factor, perm the order (by decreasing diagonal with act_order),
// dead the inputs never seen (their diagonal set to 1, their weights zeroed).
struct Hessian {
  std::vector<double> hp;
  std::vector<float> u;
  std::vector<int64_t> perm;
  std::vector<char> dead;
};

void check_gptq_inputs(const TypeTraits& tt, const InputStats& x, int64_t cols, const GptqOptions& opts) {
  check(x.n_tokens > 0, "quantize_gptq: no calibration tokens");
  check(tt.from_float_weighted && tt.grid && tt.get_codes && tt.set_codes,
        std::string("quantize_gptq: type ") + tt.name + " has no code grid");
  const int64_t B = tt.block_size;
  check(cols % B == 0, "quantize_gptq: a row of " + std::to_string(cols) + " is not a whole number of " + tt.name +
                           " blocks");
  check(opts.damp >= 0, "quantize_gptq: negative damping");
}

Hessian factor_hessian(const InputStats& x, int64_t cols, const GptqOptions& opts, ThreadPool& pool) {
  std::vector<double> h = x.xtx;
  std::vector<char> dead(size_t(cols), 0);
  double mean = 0;
  for (int64_t i = 0; i < cols; ++i) {
    if (h[i * cols + i] <= 0) dead[i] = 1, h[i * cols + i] = 1;
    mean += h[i * cols + i];
  }
  mean /= double(cols);
  std::vector<int64_t> perm(static_cast<size_t>(cols));
  std::iota(perm.begin(), perm.end(), 0);
  if (opts.act_order)
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return h[a * cols + a] > h[b * cols + b]; });
  std::vector<double> hp(size_t(cols * cols));
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < cols; ++j) hp[i * cols + j] = h[perm[i] * cols + perm[j]];
  std::vector<float> u;
  double damp = opts.damp;
  for (int attempt = 0;; ++attempt) {
    std::vector<double> hd = hp;
    for (int64_t i = 0; i < cols; ++i) hd[i * cols + i] += damp * mean;
    if (inverse_cholesky_upper(hd, cols, u, &pool)) break;
    check(attempt < 8, "quantize_gptq: the Hessian stays singular with damping " + std::to_string(damp));
    damp = damp > 0 ? damp * 10 : 1e-6;
  }
  return {std::move(hp), std::move(u), std::move(perm), std::move(dead)};
}

// act_order: every block's scales fitted on the whole row first, the grid (scale, offset, fallback code) kept.
template <class RowWeights>
void fit_global_grid(const TypeTraits& tt, int64_t rows, int64_t cols, size_t rb, const std::vector<float>& imp,
                     const RowWeights& row_weights, std::vector<uint8_t>& out, std::vector<float>& g_scale,
                     std::vector<float>& g_offset, std::vector<int32_t>& g_code, ThreadPool& pool) {
  g_scale.resize(size_t(rows * cols)), g_offset.resize(size_t(rows * cols)), g_code.resize(size_t(rows * cols));
  pool.parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    std::vector<float> wr(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      row_weights(r, wr.data());
      uint8_t* dst = out.data() + rb * size_t(r);
      tt.from_float_weighted(wr.data(), dst, cols, imp.data());
      tt.grid(dst, &g_scale[r * cols], &g_offset[r * cols], cols);
      tt.get_codes(dst, &g_code[r * cols], cols);
    }
  });
}

// One block of B weights (a row's block in processing order) fitted (clip-searched when `clip`), its grid read back.
void fit_block(const TypeTraits& tt, const float* wb, const float* imp, const ClipOptions* clip, const BlockMetric& metric,
               uint8_t* blk, float* scale, float* offset, int32_t* code, ClipScratch& scratch) {
  const int64_t B = tt.block_size;
  if (clip)
    fit_block_clipped(tt, wb, B, imp, metric, *clip, blk, scratch, nullptr);
  else
    tt.from_float_weighted(wb, blk, B, imp);
  tt.grid(blk, scale, offset, B);
  tt.get_codes(blk, code, B);
}

// The chosen codes written into the rows' blocks, whose scales are already in place.
void write_codes(const TypeTraits& tt, int64_t rows, int64_t cols, size_t rb, const std::vector<int32_t>& codes,
                 std::vector<uint8_t>& out, ThreadPool& pool) {
  pool.parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) tt.set_codes(out.data() + rb * size_t(r), &codes[r * cols], cols);
  });
}

}  // namespace

std::vector<uint8_t> gptq(const TypeTraits& tt, const float* w, int64_t rows, int64_t cols, const InputStats& x,
                          const GptqOptions& opts, ThreadPool& pool) {
  check(x.cols == cols && int64_t(x.xtx.size()) == cols * cols,
        "quantize_gptq: statistics of " + std::to_string(x.cols) + " inputs for a matrix of " + std::to_string(cols) +
            " columns");
  if (is_float_type(tt.type)) return rtn(tt, w, rows, cols, nullptr, pool);
  check_gptq_inputs(tt, x, cols, opts);
  const int64_t B = tt.block_size;
  const Hessian hs = factor_hessian(x, cols, opts, pool);
  const std::vector<float>& u = hs.u;
  const std::vector<int64_t>& perm = hs.perm;
  const std::vector<float> imp = activation_importance(x);
  const int64_t lazy = std::max<int64_t>(1, (std::max<int64_t>(opts.block, 1) + B - 1) / B) * B;
  const size_t rb = size_t(cols / B) * tt.block_bytes;
  std::vector<uint8_t> out(rb * size_t(rows));
  std::vector<int32_t> codes(size_t(rows * cols));
  auto row_weights = [&](int64_t r, float* dst) {  // W row r with dead columns zeroed, original order
    for (int64_t c = 0; c < cols; ++c) dst[c] = hs.dead[c] ? 0.f : w[r * cols + c];
  };

  // act_order: every block's scales fitted up front; the grid of the whole matrix kept.
  std::vector<float> g_scale, g_offset;
  std::vector<int32_t> g_code;
  if (opts.act_order) fit_global_grid(tt, rows, cols, rb, imp, row_weights, out, g_scale, g_offset, g_code, pool);

  const bool clip = opts.clip.n_grid > 1 && !opts.act_order;
  auto metric_at = [&](int64_t i) {  // the clip search's error for the block starting at column i
    return opts.clip_compensated ? BlockMetric{.u = &u[size_t(i * cols + i)], .ld = cols}
                                 : BlockMetric{.h = &hs.hp[size_t(i * cols + i)], .ld = cols};
  };
  const int64_t n_tiles = (rows + kTileRows - 1) / kTileRows;
  std::atomic<int64_t> next{0};
  pool.run([&](int, int) {
    std::vector<float> wt(size_t(kTileRows * cols)), wr(static_cast<size_t>(cols)), err(size_t(kTileRows * lazy));
    std::vector<float> b_scale(size_t(kTileRows * B)), b_offset(size_t(kTileRows * B));
    std::vector<int32_t> b_code(size_t(kTileRows * B));
    ClipScratch scratch;
    for (int64_t tile = next.fetch_add(1); tile < n_tiles; tile = next.fetch_add(1)) {
      const int64_t r0 = tile * kTileRows, nr = std::min(kTileRows, rows - r0);
      for (int64_t t = 0; t < nr; ++t) {  // the tile's rows, columns in processing order
        row_weights(r0 + t, wr.data());
        for (int64_t i = 0; i < cols; ++i) wt[t * cols + i] = wr[perm[i]];
      }
      for (int64_t i1 = 0; i1 < cols; i1 += lazy) {
        const int64_t i2 = std::min(cols, i1 + lazy);
        for (int64_t i = i1; i < i2; ++i) {
          if (!opts.act_order && i % B == 0)
            for (int64_t t = 0; t < nr; ++t)  // the block's scales, fitted on the weights as updated so far
              fit_block(tt, &wt[t * cols + i], &imp[i], clip ? &opts.clip : nullptr, metric_at(i),
                        out.data() + rb * size_t(r0 + t) + size_t(i / B) * tt.block_bytes, &b_scale[t * B],
                        &b_offset[t * B], &b_code[t * B], scratch);
          const int64_t c = perm[i];
          const float* ui = &u[i * cols];
          const float inv_d = 1.0f / ui[i];
          for (int64_t t = 0; t < nr; ++t) {
            const int64_t r = r0 + t;
            float s, o;
            int32_t fb;
            if (opts.act_order)
              s = g_scale[r * cols + c], o = g_offset[r * cols + c], fb = g_code[r * cols + c];
            else
              s = b_scale[t * B + i % B], o = b_offset[t * B + i % B], fb = b_code[t * B + i % B];
            float* wrow = &wt[t * cols];
            const int32_t q = snap_code(wrow[i], s, o, fb, tt.code_min, tt.code_max);
            codes[r * cols + c] = q;
            const float e = (wrow[i] - (s * float(q) + o)) * inv_d;
            err[t * lazy + (i - i1)] = e;
            if (i + 1 < i2) axpy(-e, ui + i + 1, wrow + i + 1, i2 - i - 1);
          }
        }
        if (i2 < cols)
          for (int64_t t = 0; t < nr; ++t)
            for (int64_t k = i1; k < i2; ++k)
              axpy(-err[t * lazy + (k - i1)], &u[k * cols + i2], &wt[t * cols + i2], cols - i2);
      }
    }
  });
  write_codes(tt, rows, cols, rb, codes, out, pool);
  return out;
}

}  // namespace quantize_detail

std::vector<uint8_t> quantize_gptq(DType type, const float* w, int64_t rows, int64_t cols, const InputStats& x,
                                   const GptqOptions& opts) {
  ThreadPool pool(opts.threads);
  return quantize_detail::gptq(type_traits(type), w, rows, cols, x, opts, pool);
}

}  // namespace tinfer

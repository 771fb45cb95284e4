// Round-to-nearest onto the type's grid, plain (ggml's bit-exact quantizer) or importance-weighted (the
// type's weighted scale search, then each code snapped to the nearest point of the stored grid).
#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "quantize/grid_quant.h"

namespace tinfer {
namespace quantize_detail {

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

void fit_and_snap(const TypeTraits& tt, const float* w, void* dst, int64_t n, const float* importance) {
  tt.from_float_weighted(w, dst, n, importance);
  thread_local std::vector<float> scale, offset;
  thread_local std::vector<int32_t> q;
  scale.resize(size_t(n)), offset.resize(size_t(n)), q.resize(size_t(n));
  tt.grid(dst, scale.data(), offset.data(), n);
  tt.get_codes(dst, q.data(), n);
  for (int64_t i = 0; i < n; ++i) q[i] = snap_code(w[i], scale[i], offset[i], q[i], tt.code_min, tt.code_max);
  tt.set_codes(dst, q.data(), n);
}

std::vector<uint8_t> rtn(const TypeTraits& tt, const float* w, int64_t rows, int64_t cols, const float* importance,
                         ThreadPool& pool) {
  check(rows >= 0 && cols > 0 && cols % tt.block_size == 0,
        std::string("quantize: a row of ") + std::to_string(cols) + " is not a whole number of " + tt.name + " blocks");
  const bool weighted = importance && !is_float_type(tt.type);
  if (weighted)
    check(tt.from_float_weighted && tt.grid && tt.get_codes && tt.set_codes,
          std::string("quantize: type ") + tt.name + " has no importance-weighted quantizer / code grid");
  const size_t rb = size_t(cols / tt.block_size) * tt.block_bytes;
  std::vector<uint8_t> out(rb * size_t(rows));
  pool.parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      if (weighted)
        fit_and_snap(tt, w + r * cols, out.data() + rb * size_t(r), cols, importance);
      else
        tt.from_float(w + r * cols, out.data() + rb * size_t(r), cols);
    }
  });
  return out;
}

}  // namespace quantize_detail

std::vector<uint8_t> quantize_rtn(DType type, const float* w, int64_t rows, int64_t cols, const float* importance,
                                  int threads) {
  ThreadPool pool(threads);
  return quantize_detail::rtn(type_traits(type), w, rows, cols, importance, pool);
}

std::vector<float> activation_importance(const InputStats& x) {
  check(x.n_tokens > 0 && int64_t(x.sum_sq.size()) == x.cols, "activation_importance: empty statistics");
  std::vector<float> imp(size_t(x.cols));
  for (int64_t c = 0; c < x.cols; ++c) imp[c] = float(x.sum_sq[c] / double(x.n_tokens));
  return imp;
}

}  // namespace tinfer

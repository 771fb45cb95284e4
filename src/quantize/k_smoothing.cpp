// K smoothing: q/k absolute maxima from a forward pass of `model` on a CPU backend of its own.
#include "quantize/k_smoothing.h"

#include <algorithm>

#include "core/thread_pool.h"
#include "backend/backend.h"
#include "model/model.h"

namespace tinfer {

QkAbsMax collect_qk_absmax(const Model& model, const std::vector<int32_t>& tokens, const KSmoothOptions& opts) {
  const int64_t ctx = std::max<int64_t>(1, std::min(opts.ctx, model.config().ctx_len));
  ThreadPool pool(opts.threads);
  const std::unique_ptr<Backend> backend =
      create_backend("cpu", model, BackendOptions{.pool = &pool, .max_positions = ctx});
  return collect_qk_absmax(*backend, tokens, opts.max_tokens, opts.ctx);
}

}  // namespace tinfer

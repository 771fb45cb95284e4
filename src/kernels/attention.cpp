// paged_attention: checks the shape, then splits the (token, kv head) items over the thread pool and
// runs the kernel table's row on each run of items.
#include "kernels/attention.h"

#include <string>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"

namespace tinfer {

void paged_attention(const AttentionArgs& a, ThreadPool& pool) { paged_attention(a, pool, active_kernels()); }

void paged_attention(const AttentionArgs& a, ThreadPool& pool, const KernelTable& kt) {
  if (!(a.n_kv_heads > 0 && a.n_heads % a.n_kv_heads == 0 && a.head_dim > 0))  // (message built on failure only)
    fail("attention: " + std::to_string(a.n_heads) + " query heads do not split over " + std::to_string(a.n_kv_heads) +
            " kv heads");
  const int64_t group = a.n_heads / a.n_kv_heads, bs = a.kv.block_size;
  if (!(group <= kAttnMaxGroup && bs > 0 && bs <= kAttnMaxBlockSize))
    fail("attention: query heads per kv head (" + std::to_string(group) + ") or block size (" + std::to_string(bs) +
            ") beyond the kernels' limits (" + std::to_string(kAttnMaxGroup) + ", " +
            std::to_string(kAttnMaxBlockSize) + ")");
  if (a.n_tokens <= 0) return;
  // Items cost their query's position: a causal prefill chunk's last tokens cost the most, so a static
  // split idled the thread with the early tokens (a quarter of the work for half the items). Each
  // thread takes a run and then steals single items from the back of the other runs.
  const AttentionFn fn = kt.paged_attention;
  pool.parallel_for_runs(a.n_tokens * a.n_kv_heads, 1, [&](int64_t begin, int64_t end) { fn(a, begin, end); });
}

}  // namespace tinfer

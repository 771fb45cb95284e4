// ThreadPool::parallel_for_runs: every index exactly once, in contiguous pieces no larger than the item,
// whatever the pool size (5 and 8 threads oversubscribe a 2-core machine, so late workers and steals
// from the back of their runs happen).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/thread_pool.h"

namespace tinfer {
namespace {

TEST(ThreadPool, ParallelForRunsCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(64), int64_t(1001)}) {
      for (int64_t item : {int64_t(1), int64_t(3), int64_t(64)}) {
        SCOPED_TRACE(testing::Message() << threads << " threads, n=" << n << ", item=" << item);
        for (int rep = 0; rep < 10; ++rep) {
          auto hits = std::make_unique<std::atomic<int>[]>(size_t(n));
          std::mutex mu;
          std::vector<std::pair<int64_t, int64_t>> pieces;
          pool.parallel_for_runs(n, item, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
            std::lock_guard<std::mutex> lock(mu);
            pieces.emplace_back(b, e);
          });
          for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "index " << i;
          const bool whole = threads == 1 || n <= item;  // then one call covers everything
          for (const auto& [b, e] : pieces) {
            ASSERT_LT(b, e);
            if (!whole) {
              ASSERT_LE(e - b, item);
            }
          }
        }
      }
    }
  }
}

TEST(ThreadPool, ParallelForRunsIgnoresEmptyRanges) {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for_runs(0, 4, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace tinfer

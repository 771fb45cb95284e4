// KvStorage::populate_through: the lazily reserved KV arena made resident ahead of the blocks a forward
// writes (page residency read back with mincore), in chunks, without touching what the blocks hold; and the
// CPU forward calling it for the blocks its batch writes.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "backend/cpu/kv_storage.h"
#include "core/thread_pool.h"
#include "model/model_config.h"

namespace tinfer {
namespace {

// Resident pages of [p, p + bytes) (p page-aligned).
int64_t resident_pages(const uint8_t* p, int64_t bytes) {
  const int64_t page = sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> v(size_t((bytes + page - 1) / page));
  EXPECT_EQ(mincore(const_cast<uint8_t*>(p), size_t(bytes), v.data()), 0);
  int64_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

ModelConfig small_config() {
  ModelConfig c;
  c.n_layers = 2, c.n_heads = 2, c.n_kv_heads = 2, c.head_dim = 64, c.dim = 128;
  return c;
}

TEST(KvPopulate, MakesTheBlocksAheadResidentInEveryRegionAndNothingBeyond) {
  const ModelConfig cfg = small_config();
  const int64_t n_blocks = 256, bs = 16;
  KvStorage kv(cfg, n_blocks, bs);  // f32: 16 x 2 x 64 x 4 = 8 KiB per block per K or V, 2 MiB per region
  const int64_t page = sysconf(_SC_PAGESIZE);
  const KvLayerView v0 = kv.layer_view(0);
  const int64_t bb = v0.k_block_bytes;
  ASSERT_EQ(bb, 8192);
  ASSERT_EQ(uintptr_t(v0.k) % uintptr_t(page), 0u) << "the arena is mmap'd: regions start on a page";
  for (int64_t l = 0; l < 2; ++l)
    ASSERT_EQ(resident_pages(kv.layer_view(l).k, n_blocks * bb), 0) << "a fresh arena holds no pages";

  ThreadPool pool(2);
  kv.populate_through(0, 3, &pool);  // blocks [0, 4 + 32), the regions shared out over the pool
  EXPECT_EQ(kv.populated_blocks(0), 4 + KvStorage::kPopulateAhead);
  const int64_t want = kv.populated_blocks(0) * bb / page;
  for (int64_t l = 0; l < 2; ++l) {
    const KvLayerView v = kv.layer_view(l);
    EXPECT_EQ(resident_pages(v.k, n_blocks * bb), want) << "layer " << l << " K";
    EXPECT_EQ(resident_pages(v.v, n_blocks * bb), want) << "layer " << l << " V";
    EXPECT_EQ(resident_pages(v.k, kv.populated_blocks(0) * bb), want) << "exactly the blocks ahead";
  }
  // Within half the lead of the watermark: nothing to do; past it, the next chunk.
  kv.populate_through(0, kv.populated_blocks(0) - KvStorage::kPopulateAhead / 2 - 1);
  EXPECT_EQ(kv.populated_blocks(0), 36);
  kv.populate_through(0, 20);
  EXPECT_EQ(kv.populated_blocks(0), 36 + KvStorage::kPopulateAhead);
  kv.populate_through(0, 1000);  // clamped to the arena
  EXPECT_EQ(kv.populated_blocks(0), n_blocks);
  EXPECT_EQ(resident_pages(v0.k, n_blocks * bb), n_blocks * bb / page);
}

TEST(KvPopulate, KeepsWhatTheBlocksHold) {
  const ModelConfig cfg = small_config();
  KvStorage kv(cfg, 128, 16);
  std::vector<float> k(128), v(128);
  for (int i = 0; i < 128; ++i) k[size_t(i)] = float(i) + 0.5f, v[size_t(i)] = -float(i);
  kv.write(1, 90, 3, k.data(), v.data());  // a block far past the watermark, written first (a demand fault)
  std::vector<uint8_t> before(size_t(kv.layer_view(1).k_block_bytes));
  std::memcpy(before.data(), kv.layer_view(1).k + 90 * kv.layer_view(1).k_block_bytes, before.size());
  kv.populate_through(0, 100);
  EXPECT_EQ(std::memcmp(before.data(), kv.layer_view(1).k + 90 * kv.layer_view(1).k_block_bytes, before.size()), 0);
}

}  // namespace
}  // namespace tinfer

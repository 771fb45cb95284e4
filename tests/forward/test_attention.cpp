// Paged flash-style attention against a naive reference (full softmax in double) on random Q/K/V,
// scattered block tables, ragged lengths, GQA groups, and both code paths (AVX-512 for block size
// 16 and head_dim % 16 == 0, portable otherwise).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/fp16.h"
#include "core/thread_pool.h"
#include "model/attention.h"
#include "model/kv_storage.h"

namespace tinfer {
namespace {

struct Case {
  int64_t n_heads, n_kv_heads, head_dim, block_size;
};

// Sequences of the given lengths on scattered blocks; queries (sequence, position) attend to positions
// 0..position of their sequence.
// With an f16 cache the reference uses K and V rounded to fp16, so the same tolerance applies.
void check_case(const Case& c, uint32_t seed, std::vector<int64_t> lens = {45, 7},
                std::vector<std::pair<int, int64_t>> queries = {{0, 40}, {0, 41}, {0, 42}, {0, 43}, {0, 44}, {1, 6}},
                KvDtype dtype = KvDtype::f32) {
  ModelConfig cfg;
  cfg.n_layers = 2, cfg.n_heads = c.n_heads, cfg.n_kv_heads = c.n_kv_heads, cfg.head_dim = c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim, q_dim = c.n_heads * c.head_dim, group = c.n_heads / c.n_kv_heads;
  int64_t total_blocks = 0;
  for (int64_t len : lens) total_blocks += (len + c.block_size - 1) / c.block_size;
  const int64_t n_blocks = total_blocks + 8;
  KvStorage kv(cfg, n_blocks, c.block_size, dtype);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  // Block ids: a fixed-seed shuffle of the pool, handed out in turn, so no table is contiguous.
  std::vector<int32_t> ids(static_cast<size_t>(n_blocks));
  for (int64_t b = 0; b < n_blocks; ++b) ids[b] = int32_t(b);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(seed + 99));
  ForwardBatch batch;
  size_t next = 0;
  std::vector<std::vector<std::vector<float>>> K(lens.size()), V(lens.size());  // [seq][pos][kv_dim]
  for (size_t s = 0; s < lens.size(); ++s) {
    batch.block_tables.emplace_back();
    for (int64_t p = 0; p < lens[s]; ++p) {
      if (p % c.block_size == 0) batch.block_tables[s].push_back(ids[next++]);
      std::vector<float> k(kv_dim), v(kv_dim);
      for (auto& x : k) x = nd(rng);
      for (auto& x : v) x = nd(rng);
      kv.write(1, batch.block_tables[s].back(), p % c.block_size, k.data(), v.data());
      if (dtype == KvDtype::f16)
        for (size_t e = 0; e < k.size(); ++e) k[e] = fp16_to_f32(f32_to_fp16(k[e])), v[e] = fp16_to_f32(f32_to_fp16(v[e]));
      K[s].push_back(k), V[s].push_back(v);
    }
  }
  for (auto [sq, p] : queries)
    batch.tokens.push_back(0), batch.positions.push_back(int32_t(p)), batch.seq.push_back(sq);
  const int64_t n = int64_t(batch.tokens.size()), stride = q_dim + 3;  // q rows padded: q_stride != q_dim
  std::vector<float> q(n * stride), out(n * q_dim, -1.f);
  for (auto& x : q) x = nd(rng);
  ThreadPool pool(2);
  paged_attention({c.n_heads, c.n_kv_heads, c.head_dim}, batch, kv, 1, q.data(), stride, out.data(), pool);
  for (int64_t i = 0; i < n; ++i) {
    const int s = batch.seq[i];
    const int64_t pos = batch.positions[i];
    for (int64_t h = 0; h < c.n_heads; ++h) {
      const int64_t kvh = h / group;
      std::vector<double> w(pos + 1);
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j <= pos; ++j) {
        double d = 0;
        for (int64_t e = 0; e < c.head_dim; ++e) d += double(q[i * stride + h * c.head_dim + e]) * K[s][j][kvh * c.head_dim + e];
        w[j] = d / std::sqrt(double(c.head_dim));
        mx = std::max(mx, w[j]);
      }
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (int64_t e = 0; e < c.head_dim; ++e) {
        double o = 0;
        for (int64_t j = 0; j <= pos; ++j) o += w[j] / sum * V[s][j][kvh * c.head_dim + e];
        ASSERT_NEAR(out[i * q_dim + h * c.head_dim + e], o, 2e-5) << "token " << i << " head " << h << " dim " << e;
      }
    }
  }
}

TEST(PagedAttention, MatchesNaiveAttention) {
  const Case cases[] = {
      {8, 4, 64, 16},  // AVX-512 path (when available): GQA group 2
      {9, 3, 64, 16},  // group 3 (SmolLM2's shape)
      {4, 4, 128, 16}, // MHA, head_dim 128
      {32, 4, 64, 16}, // group 8 (TinyLlama's shape)
      {10, 2, 80, 16}, // group 5 (4 + 1 heads), head_dim 80 (V chunks of 4 + 1 vectors)
      {14, 2, 48, 16}, // group 7 (4 + 3), head_dim 48 (3 vectors)
      {6, 3, 32, 16},  // group 2, head_dim 32 (2 vectors)
      {2, 1, 256, 16}, // head_dim 256
      {8, 4, 8, 16},   // head_dim 8: portable path
      {6, 2, 64, 8},   // block size 8: portable path
      {4, 1, 48, 5},   // odd block size, head_dim not a multiple of 16
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE("heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " hd " +
                 std::to_string(c.head_dim) + " bs " + std::to_string(c.block_size));
    check_case(c, seed++);
  }
}

// One or two decode tokens over long scattered sequences (many blocks, a partial last block, the
// next-block prefetch crossing tables), for the shapes of the default model and TinyLlama.
TEST(PagedAttention, LongDecodeMatchesNaiveAttention) {
  const Case cases[] = {{9, 3, 64, 16}, {32, 4, 64, 16}, {2, 1, 256, 16}, {4, 1, 32, 16}};
  uint32_t seed = 50;
  for (const Case& c : cases) {
    SCOPED_TRACE("heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " hd " +
                 std::to_string(c.head_dim));
    check_case(c, seed++, {300}, {{0, 299}});                  // 19 blocks, the last one 12 slots
    check_case(c, seed++, {300, 161}, {{0, 299}, {1, 160}});  // two sequences of different lengths
    check_case(c, seed++, {70}, {{0, 69}});
  }
}

// An f16 cache on both paths (AVX-512: block size 16, head_dim % 16 == 0; portable otherwise).
TEST(PagedAttention, F16CacheMatchesNaiveAttentionOnRoundedKV) {
  const Case cases[] = {{32, 4, 64, 16}, {9, 3, 64, 16}, {10, 2, 80, 16}, {8, 4, 8, 16}, {4, 1, 48, 5}};
  uint32_t seed = 80;
  for (const Case& c : cases) {
    SCOPED_TRACE("heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " hd " +
                 std::to_string(c.head_dim) + " bs " + std::to_string(c.block_size));
    check_case(c, seed++, {45, 7}, {{0, 40}, {0, 44}, {1, 6}}, KvDtype::f16);
    check_case(c, seed++, {300}, {{0, 299}}, KvDtype::f16);
  }
}

TEST(PagedAttention, CopyBlockDuplicatesKAndV) {
  ModelConfig cfg;
  cfg.n_layers = 3, cfg.n_heads = 4, cfg.n_kv_heads = 2, cfg.head_dim = 16;
  KvStorage kv(cfg, 4, 16);
  std::vector<float> k(32), v(32);
  for (int i = 0; i < 32; ++i) k[i] = float(i), v[i] = float(100 + i);
  for (int64_t l = 0; l < 3; ++l) kv.write(l, 1, 5, k.data(), v.data());
  kv.copy_block(1, 3);
  for (int64_t l = 0; l < 3; ++l) {
    for (int d = 0; d < 32; ++d) EXPECT_EQ(kv.k_block<float>(l, 3)[d * 16 + 5], float(d));
    EXPECT_EQ(std::vector<float>(kv.v<float>(l, 3, 5), kv.v<float>(l, 3, 5) + 32), v);
  }
}

}  // namespace
}  // namespace tinfer

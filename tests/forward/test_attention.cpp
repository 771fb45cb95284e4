// Paged flash-style attention (kernels/attention.h) against a naive reference (full softmax in double)
// on random Q/K/V, scattered block tables, ragged lengths, GQA groups, every K x V type pair (f32, f16,
// int8, int4: the reference reads the dequantized cache), decode and prefill, on every kernel table this
// CPU runs (generic; avx2: block size 16 and head_dim % 8 == 0; avx512: block size 16 and head_dim % 16 ==
// 0; an int4 V needs twice that; each falls back to the portable kernel otherwise).
#include <gtest/gtest.h>
#include <gtest/gtest-spi.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "tinfer/error.h"
#include "core/fp16.h"
#include "core/isa.h"
#include "core/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/kernel_table.h"
#include "kernels/kernels.h"
#include "backend/forward_batch.h"
#include "kernels/kv_quant.h"
#include "backend/cpu/kv_storage.h"

namespace tinfer {
namespace {

// Every kernel table this CPU can run.
std::vector<const KernelTable*> all_tables() {
  std::vector<const KernelTable*> t;
  for (Isa isa : {Isa::generic, Isa::avx2, Isa::avx512})
    if (cpu_supports(isa)) t.push_back(&kernel_table(isa));
  return t;
}

struct Case {
  int64_t n_heads, n_kv_heads, head_dim, block_size;
};

// Sequences of the given lengths on scattered blocks; queries (sequence, position) attend to positions
// 0..position of their sequence.
// The reference attends over the values the cache holds, read back through kv_dequant_k_tile / v_tile
// (f16 rounded, int8/int4 dequantized; their bytes are pinned by test_kv_quant.cpp), so one tolerance
// applies to every type: what is checked is the kernel, not the quantization.
// Runs on each of `tables` (default: all_tables()).
void check_case(const Case& c, uint32_t seed, std::vector<int64_t> lens = {45, 7},
                std::vector<std::pair<int, int64_t>> queries = {{0, 40}, {0, 41}, {0, 42}, {0, 43}, {0, 44}, {1, 6}},
                KvLayerTypes types = {}, std::vector<const KernelTable*> tables = all_tables(), int64_t window = 0) {
  ModelConfig cfg;
  cfg.n_layers = 2, cfg.n_heads = c.n_heads, cfg.n_kv_heads = c.n_kv_heads, cfg.head_dim = c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim, q_dim = c.n_heads * c.head_dim, group = c.n_heads / c.n_kv_heads;
  int64_t total_blocks = 0;
  for (int64_t len : lens) total_blocks += (len + c.block_size - 1) / c.block_size;
  const int64_t n_blocks = total_blocks + 8;
  KvStorage kv(cfg, n_blocks, c.block_size, KvPrecision::uniform(cfg.n_layers, types.k, types.v));
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
      K[s].push_back(k), V[s].push_back(v);
    }
  }
  // Replace what was written by what the cache holds.
  const KvLayerView view = kv.layer_view(1);
  std::vector<float> kt(size_t(c.head_dim * c.block_size)), vt(kt.size());
  for (size_t s = 0; s < lens.size(); ++s)
    for (int64_t p0 = 0; p0 < lens[s]; p0 += c.block_size) {
      const int64_t len = std::min(c.block_size, lens[s] - p0);
      for (int64_t h = 0; h < c.n_kv_heads; ++h) {
        kv_dequant_k_tile(view, c.head_dim, batch.block_tables[s][p0 / c.block_size], h, len, kt.data());
        kv_dequant_v_tile(view, c.head_dim, batch.block_tables[s][p0 / c.block_size], h, len, vt.data());
        for (int64_t j = 0; j < len; ++j)
          for (int64_t e = 0; e < c.head_dim; ++e)
            K[s][p0 + j][h * c.head_dim + e] = kt[e * len + j], V[s][p0 + j][h * c.head_dim + e] = vt[j * c.head_dim + e];
      }
    }
  for (auto [sq, p] : queries)
    batch.tokens.push_back(0), batch.positions.push_back(int32_t(p)), batch.seq.push_back(sq);
  const int64_t n = int64_t(batch.tokens.size()), stride = q_dim + 3;  // q rows padded: q_stride != q_dim
  std::vector<float> q(n * stride);
  for (auto& x : q) x = nd(rng);
  // The reference: [n][n_heads][head_dim] in double.
  std::vector<double> ref(size_t(n * q_dim));
  for (int64_t i = 0; i < n; ++i) {
    const int s = batch.seq[i];
    const int64_t pos = batch.positions[i];
    for (int64_t h = 0; h < c.n_heads; ++h) {
      const int64_t kvh = h / group;
      const int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;  // sliding window: (pos - W, pos]
      std::vector<double> w(pos + 1, -INFINITY);
      double mx = -1e300, sum = 0;
      for (int64_t j = lo; j <= pos; ++j) {
        double d = 0;
        for (int64_t e = 0; e < c.head_dim; ++e) d += double(q[i * stride + h * c.head_dim + e]) * K[s][j][kvh * c.head_dim + e];
        w[j] = d / std::sqrt(double(c.head_dim));
        mx = std::max(mx, w[j]);
      }
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (int64_t e = 0; e < c.head_dim; ++e) {
        double o = 0;
        for (int64_t j = lo; j <= pos; ++j) o += w[j] / sum * V[s][j][kvh * c.head_dim + e];
        ref[i * q_dim + h * c.head_dim + e] = o;
      }
    }
  }
  if (window > 0) {
    // Blocks wholly before every query's window of their sequence are poisoned (NaN in f32, garbage bytes
    // otherwise): a kernel that reads them, even to multiply by a zero weight, fails.
    for (size_t s = 0; s < lens.size(); ++s) {
      int64_t lo = lens[s];
      for (auto [sq, p] : queries)
        if (size_t(sq) == s) lo = std::min<int64_t>(lo, std::max<int64_t>(0, p - window + 1));
      std::vector<float> nan(kv_dim, std::numeric_limits<float>::quiet_NaN());
      for (int64_t b = 0; b < lo / c.block_size; ++b)
        for (int64_t j = 0; j < c.block_size; ++j) kv.write(1, batch.block_tables[s][b], j, nan.data(), nan.data());
    }
  }
  std::vector<const int32_t*> tabs;
  for (int64_t i = 0; i < n; ++i) tabs.push_back(batch.block_tables[batch.seq[i]].data());
  AttentionArgs a;
  a.kv = kv.layer_view(1);
  a.n_heads = c.n_heads, a.n_kv_heads = c.n_kv_heads, a.head_dim = c.head_dim;
  a.scale = 1.0f / std::sqrt(float(c.head_dim));
  a.window = window;
  a.n_tokens = n;
  a.positions = batch.positions.data();
  a.block_tables = tabs.data();
  a.q = q.data(), a.q_stride = stride;
  const int64_t out_stride = q_dim + 5;  // out rows padded too; the padding must stay untouched
  a.out_stride = out_stride;
  ThreadPool pool(2);
  for (const KernelTable* kt : tables) {
    SCOPED_TRACE(std::string("isa ") + isa_name(kt->isa));
    std::vector<float> out(n * out_stride, -1.f);
    a.out = out.data();
    paged_attention(a, pool, *kt);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t e = 0; e < q_dim; ++e)
        ASSERT_NEAR(out[i * out_stride + e], ref[i * q_dim + e], 2e-5)
            << "token " << i << " head " << e / c.head_dim << " dim " << e % c.head_dim;
      for (int64_t e = q_dim; e < out_stride; ++e) ASSERT_EQ(out[i * out_stride + e], -1.f) << "token " << i << " pad";
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
      {8, 4, 8, 16},   // head_dim 8: AVX2 path (one 8-float chunk), portable on AVX-512
      {6, 2, 64, 8},   // block size 8: portable path
      {4, 1, 48, 5},   // odd block size, head_dim not a multiple of 16
      {8, 1, 40, 16},  // group 8, head_dim 40: AVX2 path (2 + 1 chunks), portable on AVX-512
      {4, 4, 24, 16},  // MHA, head_dim 24: AVX2 path (2 + 1 chunks), portable on AVX-512
      {16, 4, 64, 32}, // block size 32: portable path
      {3, 3, 20, 16},  // head_dim 20 (not a multiple of 8): portable everywhere
      {2, 2, 64, 256}, // the largest block size
      {64, 1, 16, 16}, // the largest group (16 passes of 4 heads)
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE("heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " hd " +
                 std::to_string(c.head_dim) + " bs " + std::to_string(c.block_size));
    check_case(c, seed++);
  }
}

// Sliding-window attention (Mistral, Gemma 3's local layers): each query sees its last W positions only, the
// window's first block entered part-way (begin > 0 in the block kernels) or on a block boundary, windows wider
// than the sequence, W = 1; every K x V type pair, GQA, prefill-like runs of queries; the blocks before every
// window are poisoned.
TEST(PagedAttention, SlidingWindowMatchesNaiveWindowedAttention) {
  const Case cases[] = {{8, 4, 64, 16}, {4, 1, 256, 16}, {9, 3, 64, 16}, {6, 2, 64, 8}, {4, 1, 48, 5}, {8, 1, 40, 16}};
  const std::vector<std::pair<int, int64_t>> queries = {{0, 60}, {0, 61}, {0, 62}, {0, 63}, {0, 64}, {0, 70}, {1, 6}};
  uint32_t seed = 300;
  for (const Case& c : cases)
    for (int64_t window : {1, 7, 16, 17, 32, 100}) {
      SCOPED_TRACE("heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " hd " +
                   std::to_string(c.head_dim) + " bs " + std::to_string(c.block_size) + " window " + std::to_string(window));
      check_case(c, seed++, {71, 7}, queries, {}, all_tables(), window);
    }
  for (KvDtype k : {KvDtype::f16, KvDtype::int8, KvDtype::int4})
    for (KvDtype v : {KvDtype::f32, KvDtype::int8, KvDtype::int4}) {
      SCOPED_TRACE(std::string("types ") + kv_dtype_info(k).name + "/" + kv_dtype_info(v).name);
      check_case({8, 2, 64, 16}, seed++, {71, 7}, queries, {k, v}, all_tables(), 20);
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

// An f16 cache on every path (fast paths: block size 16; portable otherwise).
TEST(PagedAttention, F16CacheMatchesNaiveAttentionOnRoundedKV) {
  const Case cases[] = {{32, 4, 64, 16}, {9, 3, 64, 16}, {10, 2, 80, 16}, {8, 4, 8, 16}, {4, 1, 48, 5},
                        {8, 1, 40, 16},  {2, 1, 256, 16}, {4, 4, 128, 16}, {6, 2, 64, 8}, {16, 4, 32, 32}};
  uint32_t seed = 80;
  for (const Case& c : cases) {
    SCOPED_TRACE("heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " hd " +
                 std::to_string(c.head_dim) + " bs " + std::to_string(c.block_size));
    check_case(c, seed++, {45, 7}, {{0, 40}, {0, 44}, {1, 6}}, {KvDtype::f16, KvDtype::f16});
    check_case(c, seed++, {300}, {{0, 299}}, {KvDtype::f16, KvDtype::f16});
  }
}

// Every GQA group size the fast paths unroll differently (4-head passes + a remainder of 0-3) with every
// head_dim they split differently (16-float chunks of 4 + 0-3 on AVX-512, 8-float chunks of 2 + 0-1 on
// AVX2), on block size 16 and the portable path's 8 and 32, f32 and f16.
TEST(PagedAttention, GroupsAndHeadDimsMatchNaiveAttention) {
  uint32_t seed = 200;
  for (int64_t group : {1, 2, 3, 4, 5, 7, 8})
    for (int64_t hd : {32, 48, 64, 80, 128, 256})
      for (int64_t bs : {16, 8, 32}) {
        if (bs != 16 && hd != 64 && hd != 48) continue;  // the portable path's block sizes on two dims suffice
        const Case c{2 * group, 2, hd, bs};
        for (KvDtype dt : {KvDtype::f32, KvDtype::f16}) {
          SCOPED_TRACE("group " + std::to_string(group) + " hd " + std::to_string(hd) + " bs " + std::to_string(bs) +
                       " " + kv_dtype_name(dt));
          check_case(c, seed++, {37, 20}, {{0, 36}, {1, 19}, {1, 15}, {0, 0}}, {dt, dt});
        }
      }
}

// Prefill: every position of a chunk of two sequences (causal: token p attends to 0..p), as
// CpuForward schedules a prompt, including positions 0 and those at block boundaries.
TEST(PagedAttention, PrefillMatchesNaiveAttention) {
  const Case cases[] = {{32, 4, 64, 16}, {9, 3, 64, 16}, {4, 4, 128, 16}, {6, 2, 64, 8}, {8, 1, 40, 16}};
  uint32_t seed = 400;
  for (const Case& c : cases)
    for (KvDtype dt : {KvDtype::f32, KvDtype::f16}) {
      SCOPED_TRACE("heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " hd " +
                   std::to_string(c.head_dim) + " bs " + std::to_string(c.block_size) + " " + kv_dtype_name(dt));
      std::vector<std::pair<int, int64_t>> q;
      for (int64_t p = 0; p < 70; ++p) q.push_back({0, p});
      for (int64_t p = 0; p < 33; ++p) q.push_back({1, p});
      check_case(c, seed++, {70, 33}, q, {dt, dt});
    }
}

// The checks above can fail: kernels broken on purpose (a 1e-4 error in one output; the last key of
// every query dropped; the first block skipped) are caught.
void broken_tiny_error(const AttentionArgs& a, int64_t i0, int64_t i1) {
  generic_paged_attention(a, i0, i1);
  if (i1 == a.n_tokens * a.n_kv_heads)  // an element of the last item (written by this call)
    a.out[(a.n_tokens - 1) * a.out_stride + (a.n_heads - 1) * a.head_dim + 3] += 1e-4f;
}
void broken_drop_last_key(const AttentionArgs& a, int64_t i0, int64_t i1) {
  std::vector<int32_t> pos(a.positions, a.positions + a.n_tokens);
  for (auto& p : pos) p = std::max(0, p - 1);
  AttentionArgs b = a;
  b.positions = pos.data();
  generic_paged_attention(b, i0, i1);
}
void broken_skip_first_block(const AttentionArgs& a, int64_t i0, int64_t i1) {
  std::vector<const int32_t*> tabs(a.block_tables, a.block_tables + a.n_tokens);
  std::vector<int32_t> pos(a.positions, a.positions + a.n_tokens);
  for (int64_t i = 0; i < a.n_tokens; ++i)
    if (pos[i] >= a.kv.block_size) tabs[i] += 1, pos[i] -= int32_t(a.kv.block_size);
  AttentionArgs b = a;
  b.block_tables = tabs.data(), b.positions = pos.data();
  generic_paged_attention(b, i0, i1);
}
KernelTable g_broken;
void check_broken(KvLayerTypes types = {}) {
  check_case({8, 2, 64, 16}, 7, {45, 7}, {{0, 40}, {0, 44}, {1, 6}}, types, {&g_broken});
}

TEST(PagedAttention, BrokenKernelsFailTheCheck) {
  g_broken = kernel_table(Isa::generic);
  for (AttentionFn fn : {broken_tiny_error, broken_drop_last_key, broken_skip_first_block}) {
    g_broken.paged_attention = fn;
    EXPECT_FATAL_FAILURE(check_broken(), "");
  }
  g_broken.paged_attention = generic_paged_attention;
  check_broken();  // and the harness itself passes an intact kernel
}

constexpr KvDtype kKvTypes[] = {KvDtype::f32, KvDtype::f16, KvDtype::int8, KvDtype::int4};
std::string types_name(KvLayerTypes t) { return std::string("K ") + kv_dtype_name(t.k) + " V " + kv_dtype_name(t.v); }
std::string case_name(const Case& c) {
  return "heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " hd " +
         std::to_string(c.head_dim) + " bs " + std::to_string(c.block_size);
}

// Every K type with every V type, on the fast paths' shapes and on shapes they hand to the portable kernel:
// head_dim 80 and 48 (an int4 V needs head_dim % 32 on AVX-512), 40 (AVX2 only; int4 V portable), block
// size 5, head_dim 20 and odd 7 (portable everywhere).
TEST(PagedAttention, EveryKvTypePairMatchesNaiveAttentionOnDequantizedKV) {
  const Case cases[] = {{32, 4, 64, 16}, {9, 3, 64, 16}, {4, 4, 128, 16}, {10, 2, 80, 16}, {6, 2, 48, 16},
                        {8, 1, 40, 16},  {4, 1, 48, 5},  {3, 3, 20, 16},  {4, 2, 7, 16}};
  uint32_t seed = 600;
  for (const Case& c : cases)
    for (KvDtype kt : kKvTypes)
      for (KvDtype vt : kKvTypes) {
        SCOPED_TRACE(case_name(c) + " " + types_name({kt, vt}));
        check_case(c, seed++, {45, 7}, {{0, 40}, {0, 44}, {0, 15}, {1, 6}}, {kt, vt});
      }
}

// GQA groups 1-8 (4-head passes plus every remainder) at head_dim 64 and 128, every K x V type pair.
TEST(PagedAttention, EveryKvTypePairAndGroupMatchesNaiveAttention) {
  uint32_t seed = 1000;
  for (int64_t group = 1; group <= 8; ++group)
    for (int64_t hd : {64, 128})
      for (KvDtype kt : kKvTypes)
        for (KvDtype vt : kKvTypes) {
          const Case c{2 * group, 2, hd, 16};
          SCOPED_TRACE(case_name(c) + " " + types_name({kt, vt}));
          check_case(c, seed++, {37, 20}, {{0, 36}, {1, 19}, {1, 15}, {0, 0}}, {kt, vt});
        }
}

// Prefill chunks (every position of two sequences, causal) with every K x V type pair.
TEST(PagedAttention, EveryKvTypePairPrefillMatchesNaiveAttention) {
  std::vector<std::pair<int, int64_t>> q;
  for (int64_t p = 0; p < 70; ++p) q.push_back({0, p});
  for (int64_t p = 0; p < 33; ++p) q.push_back({1, p});
  uint32_t seed = 1400;
  for (const Case& c : {Case{32, 4, 64, 16}, Case{9, 3, 64, 16}, Case{4, 2, 128, 16}})
    for (KvDtype kt : kKvTypes)
      for (KvDtype vt : kKvTypes) {
        SCOPED_TRACE(case_name(c) + " " + types_name({kt, vt}));
        check_case(c, seed++, {70, 33}, q, {kt, vt});
      }
}

// Long decodes (1,600 positions: 100 blocks, the next-block prefetch of codes and scales crossing a
// scattered table) next to a short sequence, every K x V type pair.
TEST(PagedAttention, EveryKvTypePairLongDecodeMatchesNaiveAttention) {
  uint32_t seed = 1700;
  for (const Case& c : {Case{32, 4, 64, 16}, Case{9, 3, 64, 16}, Case{4, 1, 128, 16}})
    for (KvDtype kt : kKvTypes)
      for (KvDtype vt : kKvTypes) {
        SCOPED_TRACE(case_name(c) + " " + types_name({kt, vt}));
        check_case(c, seed++, {1600, 300}, {{0, 1599}, {0, 1537}, {1, 299}}, {kt, vt});
      }
}

// The checks above see a wrong scale layout: each table's own kernel, reading the K or the V scales one
// slot off (k_scales_offset / v_scales_offset shifted by one entry, inside the block), fails them, for
// int8 and int4 K and V; unshifted, it passes.
AttentionFn g_fast;
KvLayerTypes g_types;
void shifted_k_scales(const AttentionArgs& a, int64_t i0, int64_t i1) {
  AttentionArgs b = a;
  b.kv.k_scales_offset += b.kv.k_scale_bytes;
  g_fast(b, i0, i1);
}
void shifted_v_scales(const AttentionArgs& a, int64_t i0, int64_t i1) {
  AttentionArgs b = a;
  b.kv.v_scales_offset -= b.kv.v_scale_bytes;
  g_fast(b, i0, i1);
}
void check_broken_types() { check_broken(g_types); }

TEST(PagedAttention, ShiftedScaleLayoutFailsTheCheck) {
  for (const KernelTable* kt : all_tables()) {
    SCOPED_TRACE(std::string("isa ") + isa_name(kt->isa));
    g_broken = *kt;
    g_fast = kt->paged_attention;
    for (KvDtype t : {KvDtype::int8, KvDtype::int4}) {
      SCOPED_TRACE(kv_dtype_name(t));
      g_types = {t, KvDtype::f16};
      g_broken.paged_attention = shifted_k_scales;
      EXPECT_FATAL_FAILURE(check_broken_types(), "");
      g_types = {KvDtype::f16, t};
      g_broken.paged_attention = shifted_v_scales;
      EXPECT_FATAL_FAILURE(check_broken_types(), "");
      g_broken.paged_attention = g_fast;
      for (KvLayerTypes types : {KvLayerTypes{t, KvDtype::f16}, KvLayerTypes{KvDtype::f16, t}}) check_broken(types);
    }
  }
}

TEST(PagedAttention, RejectsShapesBeyondTheLimits) {
  ModelConfig cfg;
  cfg.n_layers = 1, cfg.n_heads = 130, cfg.n_kv_heads = 2, cfg.head_dim = 16;
  KvStorage kv(cfg, 2, 16);
  ThreadPool pool(1);
  AttentionArgs a;
  a.kv = kv.layer_view(0);
  a.n_heads = 130, a.n_kv_heads = 2, a.head_dim = 16;  // group 65
  EXPECT_THROW(paged_attention(a, pool), Error);
  a.n_heads = 5;  // not a multiple of the kv heads
  EXPECT_THROW(paged_attention(a, pool), Error);
  KvStorage big(cfg, 1, 512);
  a.kv = big.layer_view(0), a.n_heads = 4;
  EXPECT_THROW(paged_attention(a, pool), Error);
}

// Every layer in its own types (f32, then int8 K with f16 V, then int4): the copy holds the same bytes, so
// the same values, in every layer; the f32 layer reads back exactly what was written.
TEST(PagedAttention, CopyBlockDuplicatesKAndV) {
  ModelConfig cfg;
  cfg.n_layers = 3, cfg.n_heads = 4, cfg.n_kv_heads = 2, cfg.head_dim = 16;
  const KvPrecision prec{{{KvDtype::f32, KvDtype::f32}, {KvDtype::int8, KvDtype::f16}, {KvDtype::int4, KvDtype::int4}}};
  KvStorage kv(cfg, 4, 16, prec);
  std::vector<float> k(32), v(32);
  for (int i = 0; i < 32; ++i) k[i] = float(i), v[i] = float(100 + i);
  for (int64_t l = 0; l < 3; ++l) kv.write(l, 1, 5, k.data(), v.data());
  kv.copy_block(1, 3);
  for (int64_t l = 0; l < 3; ++l) {
    const KvLayerView view = kv.layer_view(l);
    for (int64_t h = 0; h < 2; ++h) {
      std::vector<float> k1(16 * 6), k3(16 * 6), v1(6 * 16), v3(6 * 16);
      kv_dequant_k_tile(view, 16, 1, h, 6, k1.data()), kv_dequant_k_tile(view, 16, 3, h, 6, k3.data());
      kv_dequant_v_tile(view, 16, 1, h, 6, v1.data()), kv_dequant_v_tile(view, 16, 3, h, 6, v3.data());
      for (int d = 0; d < 16; ++d) {
        EXPECT_EQ(k3[d * 6 + 5], k1[d * 6 + 5]) << l;
        EXPECT_EQ(v3[5 * 16 + d], v1[5 * 16 + d]) << l;
        if (l == 0) {
          EXPECT_EQ(k3[d * 6 + 5], float(h * 16 + d));
          EXPECT_EQ(v3[5 * 16 + d], float(100 + h * 16 + d));
        }
        EXPECT_NEAR(k3[d * 6 + 5], float(h * 16 + d), 1.1) << l;  // int4: 15 steps over a range of 15
        EXPECT_NEAR(v3[5 * 16 + d], float(100 + h * 16 + d), 1.1) << l;
      }
    }
  }
}

}  // namespace
}  // namespace tinfer

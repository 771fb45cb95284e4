// kv-plan's arithmetic (engine/kv_capacity.h) against what the engine really allocates: from the GGUF header
// alone, for every KvDtype and K != V splits, on stories260K (MHA) and a synthetic GQA model with an odd head_dim,
// the report's blocks, tokens, bytes per token and bytes equal Engine::create's stats and the backend's KvStorage.
#include <gtest/gtest.h>
#include <tinfer/engine.h>

#include <filesystem>

#include "backend/k_smoothing_at_load.h"
#include "common/test_env.h"
#include "tinfer/error.h"
#include "engine/kv_capacity.h"
#include "backend/backend.h"
#include "model/model.h"
#include "model/model_shape.h"
#include "model/synth/synth.h"

namespace tinfer {
namespace {

// A GQA model file (8 heads over 2 kv heads, head_dim 12: int4 codes of a head do not fill whole 16-byte lines),
// written once per process and removed when it exits.
struct GqaModelFile {
  std::string path;
  GqaModelFile() {
    SynthSpec s;
    s.dim = 96;
    s.n_heads = 8;
    s.n_kv_heads = 2;
    s.n_layers = 3;
    s.ctx_len = 512;
    path = (std::filesystem::path(::testing::TempDir()) / ("tinfer_kv_capacity_" + std::to_string(::getpid()) + ".gguf"))
               .string();
    synthesize_model(s, path, 1);
  }
  ~GqaModelFile() { std::filesystem::remove(path); }
};

std::string gqa_model_file() {
  static const GqaModelFile file;
  return file.path;
}

struct Case {
  KvDtype k, v;
};
const Case kCases[] = {{KvDtype::f32, KvDtype::f32},   {KvDtype::f16, KvDtype::f16},   {KvDtype::int8, KvDtype::int8},
                       {KvDtype::int4, KvDtype::int4}, {KvDtype::int8, KvDtype::int4}, {KvDtype::f16, KvDtype::int8}};

// kv-plan's figures for `path` equal Engine::create's and the KvStorage the backend allocates for that plan.
void expect_engine_agrees(const std::string& path, int64_t budget, int block_size, int ctx) {
  const ModelShape shape = model_shape_from_gguf(path);
  std::unique_ptr<Model> model = Model::load(path);
  EXPECT_EQ(shape.weight_bytes, int64_t(model->weight_bytes()));
  auto backend = create_backend("cpu", *model, BackendOptions{.threads = 1});
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(kv_dtype_name(c.k)) + "/" + kv_dtype_name(c.v) + " block " + std::to_string(block_size));
    EngineConfig ec;
    ec.model_path = path;
    ec.threads = 1;
    ec.verbose = false;
    ec.kv.memory_bytes = budget;
    ec.kv.block_size = block_size;
    ec.scheduler.max_model_len = ctx;
    ec.kv.dtype = c.k;
    if (c.v != c.k) ec.kv.dtype_v = c.v;
    const KvPrecision precision = ec.kv_precision(shape.config.n_layers);
    const KvCapacityReport r =
        kv_capacity(shape.config, precision,
                    KvCapacityQuery{.kv_memory_bytes = budget, .block_size = block_size, .context_len = ctx});

    const EngineStats st = Engine::create(ec)->stats();
    EXPECT_EQ(r.plan.num_blocks, st.kv_blocks_total);
    EXPECT_EQ(r.plan.capacity_tokens, st.kv_capacity_tokens);
    EXPECT_EQ(int64_t(r.plan.bytes_per_token), st.kv_bytes_per_token);
    // The engine calibrates K smoothing at load where K is quantized (its factors change no byte).
    EXPECT_EQ(precision.describe() + (wants_k_smoothing(precision) ? " +k-smooth" : ""), st.kv_types);
    EXPECT_EQ(r.plan.bytes_used, backend->allocate_kv(r.plan.num_blocks, block_size, precision)->bytes());

    // Per-layer rows add up to the total, and each is the kv heads' values plus their scales.
    int64_t sum = 0;
    for (const KvLayerBytes& l : r.layers) {
      EXPECT_EQ(l.k_bytes_per_token, shape.config.n_kv_heads * kv_head_bytes(c.k, shape.config.head_dim));
      EXPECT_EQ(l.v_bytes_per_token, shape.config.n_kv_heads * kv_head_bytes(c.v, shape.config.head_dim));
      sum += l.k_bytes_per_token + l.v_bytes_per_token;
    }
    EXPECT_EQ(sum, int64_t(r.plan.bytes_per_token));
    // The comparison row of the same uniform type is the plan itself.
    if (c.k == c.v) {
      const KvDtypeCapacity& row = r.by_dtype[size_t(c.k)];
      EXPECT_EQ(row.type, c.k);
      EXPECT_EQ(row.num_blocks, r.plan.num_blocks);
      EXPECT_EQ(row.max_concurrency, r.plan.max_concurrency);
    }
  }
}

TEST(KvCapacity, EqualsEngineAllocationStories) {
  const std::string path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  expect_engine_agrees(path, 3 << 20, 16, 256);
  expect_engine_agrees(path, (5 << 20) + 12345, 7, 100);  // ragged block size, budget and context
}

TEST(KvCapacity, EqualsEngineAllocationGqa) {
  expect_engine_agrees(gqa_model_file(), 1 << 20, 16, 512);
  expect_engine_agrees(gqa_model_file(), (1 << 20) + 777, 5, 333);
}

TEST(KvCapacity, ComparisonRowsScaleWithElementBytes) {
  const ModelShape s = model_shape_like("llama-2-7b", "");
  const KvCapacityReport r = kv_capacity(s.config, KvPrecision::uniform(32, KvDtype::f16),
                                         KvCapacityQuery{.kv_memory_bytes = int64_t(80) << 30, .context_len = 2048});
  ASSERT_EQ(r.by_dtype.size(), 4u);
  // 2 x 32 layers x 32 kv heads x (128 values + scales): f32 4 B, f16 2 B, int8 1 B + fp16 scale, int4 64 B + 2 fp16.
  EXPECT_EQ(r.by_dtype[0].bytes_per_token, 1048576u);
  EXPECT_EQ(r.by_dtype[1].bytes_per_token, 524288u);
  EXPECT_EQ(r.by_dtype[2].bytes_per_token, 2048u * 130);
  EXPECT_EQ(r.by_dtype[3].bytes_per_token, 2048u * 68);
  EXPECT_EQ(r.by_dtype[1].max_concurrency, 80);  // 80 GiB / (2048 x 512 KiB)
  EXPECT_EQ(r.by_dtype[2].max_concurrency, 157);
  EXPECT_EQ(r.by_dtype[3].max_concurrency, 301);
}

// With --kv-fraction the budget is the fraction of MemAvailable less the weights, capped at max_seqs sequences.
TEST(KvCapacity, FractionOfAvailableLessWeights) {
  const ModelShape s = model_shape_like("tinyllama-1.1b", "");
  const KvPrecision f16 = KvPrecision::uniform(22, KvDtype::f16);
  const size_t avail = size_t(16) << 30;
  KvCapacityQuery q{.kv_fraction = 0.25,
                    .mem_available = avail,
                    .weight_bytes = s.weight_bytes,
                    .max_seqs = 100000,
                    .context_len = 2048};
  KvCapacityReport r = kv_capacity(s.config, f16, q);
  EXPECT_EQ(r.budget.budget_bytes, size_t(double(avail - size_t(s.weight_bytes)) * 0.25));
  EXPECT_EQ(r.budget.mem_available, avail - size_t(s.weight_bytes));
  q.max_seqs = 3;  // the engine's demand cap: 3 x 2048 tokens
  r = kv_capacity(s.config, f16, q);
  EXPECT_EQ(r.budget.budget_bytes, size_t(3) * 2048 * 22528);
  EXPECT_EQ(r.plan.max_concurrency, 3);
  q.weight_bytes = int64_t(avail);
  EXPECT_THROW(kv_capacity(s.config, f16, q), Error);
}

TEST(KvCapacity, RefusesWhatTheEngineRefuses) {
  const ModelShape s = model_shape_like("llama-2-7b", "");
  const KvPrecision f16 = KvPrecision::uniform(32, KvDtype::f16);
  try {
    kv_capacity(s.config, f16, KvCapacityQuery{.kv_memory_bytes = int64_t(512) << 20, .context_len = 2048});
    FAIL() << "a budget below one sequence was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit the KV cache"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2048"), std::string::npos) << e.what();
  }
  try {
    kv_capacity(s.config, f16, KvCapacityQuery{.kv_memory_bytes = int64_t(8) << 30, .context_len = 8192});
    FAIL() << "a context beyond the model's was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("beyond the model's context length 4096"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      kv_capacity(s.config, KvPrecision::uniform(31, KvDtype::f16), KvCapacityQuery{.kv_memory_bytes = 1 << 30}),
      Error);
}

}  // namespace
}  // namespace tinfer

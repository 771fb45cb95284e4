// Backend capabilities (backend/backend.h): the CPU backend reports every one and its setters work through a
// Backend&; a backend with none (a fake here) reports none, answers "nothing skipped, no exit" to the queries,
// and every setter and cost query throws the error naming the backend and the capability.
#include <gtest/gtest.h>

#include <string>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "backend/backend.h"
#include "model/model.h"
#include "model/synth/synth.h"

namespace tinfer {
namespace {

constexpr BackendCapability kAll[] = {BackendCapability::kLayerSkip, BackendCapability::kEarlyExit,
                                      BackendCapability::kActivationObserver, BackendCapability::kPartialDepth};

// The least a Backend must implement; no capability.
class FakeBackend final : public Backend {
 public:
  const char* name() const override { return "fake"; }
  const ModelConfig& config() const override { return config_; }
  size_t weight_bytes() const override { return 0; }
  int64_t max_positions() const override { return 0; }
  using Backend::allocate_kv;
  std::unique_ptr<KvCache> allocate_kv(int64_t, int64_t, const KvPrecision&, int64_t) override { return nullptr; }
  void forward(const ForwardBatch&, KvCache&, float*) override {}
  OpProfile& profile() override { return profile_; }

 private:
  ModelConfig config_;
  OpProfile profile_;
};

// The Error's message of fn(), or "" when it does not throw.
template <class F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BackendCaps, CapabilityLessBackendRefusesWithAClearError) {
  FakeBackend fake;
  Backend& b = fake;
  for (BackendCapability cap : kAll) EXPECT_FALSE(b.supports(cap)) << capability_name(cap);
  EXPECT_EQ(error_of([&] { b.set_layer_skip(LayerSkip::none(2)); }),
            "backend 'fake' does not support layer skip (needed by set_layer_skip)");
  EXPECT_EQ(error_of([&] { b.set_early_exit(EarlyExit{{1}, 0.5f}); }),
            "backend 'fake' does not support early exit (needed by set_early_exit)");
  EXPECT_EQ(error_of([&] { b.set_linear_observer({}); }),
            "backend 'fake' does not support the activation observer (needed by set_linear_observer)");
  EXPECT_EQ(error_of([&] { (void)b.layer_bytes(0); }),
            "backend 'fake' does not support early exit (needed by layer_bytes)");
  EXPECT_NE(error_of([&] { (void)b.qkv_bytes(0); }), "");
  EXPECT_NE(error_of([&] { (void)b.head_bytes(); }), "");
  EXPECT_EQ(error_of([&] { b.require(BackendCapability::kPartialDepth, "--spec self"); }),
            "backend 'fake' does not support partial depth (ForwardBatch::n_layers) (needed by --spec self)");
  EXPECT_EQ(error_of([&] { b.require(BackendCapability::kLayerSkip); }), "backend 'fake' does not support layer skip");
  // The queries answer for a backend that does none of it.
  EXPECT_TRUE(b.layer_skip().empty());
  EXPECT_FALSE(b.early_exit().enabled());
  EXPECT_EQ(b.early_exit_counters().eligible, 0);
}

TEST(BackendCaps, CpuBackendSupportsEveryCapabilityThroughTheInterface) {
  SynthSpec spec;
  spec.dim = 32, spec.n_layers = 3, spec.n_heads = 4, spec.n_kv_heads = 2, spec.head_dim = 8, spec.ffn_dim = 64;
  spec.n_vocab = 300, spec.ctx_len = 32, spec.seed = 3;
  auto model = Model::from_gguf_bytes(synthesize_model_bytes(spec));
  ThreadPool pool(1);
  std::unique_ptr<Backend> b = create_backend("cpu", *model, BackendOptions{.pool = &pool});
  for (BackendCapability cap : kAll) {
    EXPECT_TRUE(b->supports(cap)) << capability_name(cap);
    EXPECT_NO_THROW(b->require(cap, "the test"));
  }
  LayerSkip skip = LayerSkip::none(3);
  skip.mlp[1] = 1;
  b->set_layer_skip(skip);
  EXPECT_EQ(b->layer_skip(), skip);
  EXPECT_LT(b->weight_bytes_read(), b->weight_bytes());
  EXPECT_THROW(b->set_layer_skip(LayerSkip::none(4)), Error);  // the CPU's own checks, reached virtually
  b->set_early_exit(EarlyExit{{2}, 0.5f});
  EXPECT_EQ(b->early_exit().layers, std::vector<int32_t>{2});
  EXPECT_GT(b->head_bytes(), 0u);
  EXPECT_GT(b->qkv_bytes(0), 0u);
  int calls = 0;
  b->set_linear_observer([&](int64_t, LinearInput, const float*, int64_t, int64_t) { ++calls; });
  auto kv = b->allocate_kv(2, 16, KvDtype::f32);
  ForwardBatch batch;
  batch.tokens = {1, 2}, batch.positions = {0, 1}, batch.seq = {0, 0}, batch.block_tables = {{0}};
  b->forward(batch, *kv, nullptr);
  EXPECT_GT(calls, 0);
}

}  // namespace
}  // namespace tinfer

// Layer skipping in the fast forward: a plan that skips nothing is bit-identical to no plan; skipping layer l's
// attention, MLP or both equals the reference forward without them (and differs from the full model: the skip
// took effect); a plan for another layer count is refused.
#include <gtest/gtest.h>

#include <vector>

#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "engine/session.h"
#include "forward_test_util.h"
#include "backend/cpu/cpu_forward.h"
#include "backend/cpu/reference_forward.h"
#include "model/synth/synth.h"

namespace tinfer {
namespace {

using forward_test::nmse;

std::unique_ptr<Model> model3(DType type) {
  SynthSpec spec;
  spec.dim = 64, spec.n_layers = 3, spec.n_heads = 8, spec.n_kv_heads = 4, spec.head_dim = 8, spec.ffn_dim = 172;
  spec.n_vocab = 300, spec.ctx_len = 128, spec.weight_type = type, spec.seed = 11, spec.weight_std = 0.08f;
  return Model::from_gguf_bytes(synthesize_model_bytes(spec));
}

std::vector<int32_t> tokens(int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[size_t(i)] = (i * 37 + 5) % 300;
  return t;
}

std::vector<float> fast_logits(CpuForward& fwd, const std::vector<int32_t>& t) {
  Session session(fwd, 64);
  std::vector<float> out;
  session.feed_all_logits(t, out, 5);  // ragged chunks
  return out;
}

TEST(LayerSkip, SkippingNothingIsBitIdentical) {
  ThreadPool pool(2);
  auto m = model3(DType::Q8_0);
  CpuForward plain(*m, pool), none(*m, BackendOptions{.pool = &pool, .skip = LayerSkip::none(3)});
  EXPECT_EQ(fast_logits(plain, tokens(17)), fast_logits(none, tokens(17)));
}

TEST(LayerSkip, SkippedBlocksEqualTheReferenceWithoutThem) {
  ThreadPool pool(2);
  auto m = model3(DType::F32);
  const std::vector<int32_t> t = tokens(13);
  CpuForward fwd(*m, pool);
  const std::vector<float> full = fast_logits(fwd, t);
  const int64_t V = 300;
  for (int64_t l = 0; l < 3; ++l) {
    for (int what = 0; what < 3; ++what) {  // attention, MLP, both
      LayerSkip skip = LayerSkip::none(3);
      if (what != 1) skip.attn[size_t(l)] = 1;
      if (what != 0) skip.mlp[size_t(l)] = 1;
      SCOPED_TRACE(skip.describe());
      fwd.set_layer_skip(skip);
      const std::vector<float> got = fast_logits(fwd, t);
      const auto want = ReferenceForward(*m, skip).logits(t);
      for (size_t i = 0; i < t.size(); ++i) {
        const std::vector<float> row(got.begin() + int64_t(i) * V, got.begin() + int64_t(i + 1) * V);
        EXPECT_LT(nmse(row, want[i]), 1e-9) << "position " << i;
      }
      EXPECT_GT(nmse(got, full), 1e-6);  // the skip changed the output
    }
  }
  // Skipping everything leaves the embedding through the final norm and head.
  LayerSkip all{std::vector<uint8_t>(3, 1), std::vector<uint8_t>(3, 1)};
  fwd.set_layer_skip(all);
  const std::vector<float> got = fast_logits(fwd, t);
  const auto want = ReferenceForward(*m, all).logits(t);
  EXPECT_LT(nmse(std::vector<float>(got.begin(), got.begin() + V), want[0]), 1e-9);
  EXPECT_EQ(all.describe(), "attn 0,1,2; mlp 0,1,2");
}

TEST(LayerSkip, PlanForAnotherLayerCountIsRefused) {
  ThreadPool pool(2);
  auto m = model3(DType::F32);
  CpuForward fwd(*m, pool);
  EXPECT_THROW(fwd.set_layer_skip(LayerSkip::none(4)), Error);
  EXPECT_THROW(CpuForward(*m, BackendOptions{.pool = &pool, .skip = LayerSkip::none(2)}), Error);
}

}  // namespace
}  // namespace tinfer

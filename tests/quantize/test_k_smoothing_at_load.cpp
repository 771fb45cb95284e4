// K smoothing at load (backend/k_smoothing_at_load.h): which precisions want it, factors deterministic for a model
// and well formed (positive, finite, geometric mean 1 per head), kept only on layers whose K is quantized, and on
// stories260K an int8 K cache moving closer to the f32 cache's next-token distributions (lower mean KL on held-out
// TinyStories text) with the load-time factors than without.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "common/logits_kl.h"
#include "common/test_env.h"
#include "core/thread_pool.h"
#include "engine/session.h"
#include "backend/backend.h"
#include "backend/k_smoothing_at_load.h"
#include "model/model.h"

namespace tinfer {
namespace {

using test::mean_kl;

TEST(KSmoothingAtLoad, WantedOnlyForAQuantizedKWithoutFactors) {
  EXPECT_FALSE(wants_k_smoothing(KvPrecision::uniform(3, KvDtype::f16)));
  EXPECT_FALSE(wants_k_smoothing(KvPrecision::uniform(3, KvDtype::f32, KvDtype::int4)));
  EXPECT_TRUE(wants_k_smoothing(KvPrecision::uniform(3, KvDtype::int8)));
  EXPECT_TRUE(wants_k_smoothing(KvPrecision::uniform(3, KvDtype::int4, KvDtype::f16)));
  KvPrecision given = KvPrecision::uniform(3, KvDtype::int8);
  given.k_smooth.assign(3, std::vector<float>{});  // a plan's (even an empty one) is the plan's
  EXPECT_FALSE(wants_k_smoothing(given));
  KvPrecision skipped = KvPrecision{{{KvDtype::f16, KvDtype::f16}, {KvDtype::int8, KvDtype::int8}}};
  skipped.no_kv = {0, 1};  // the only int8 layer holds no KV
  EXPECT_FALSE(wants_k_smoothing(skipped));
}

TEST(KSmoothingAtLoad, DeterministicWellFormedAndOnlyWhereKIsQuantized) {
  const std::string path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ThreadPool pool(2);
  auto be = create_backend("cpu", *model, BackendOptions{.pool = &pool});
  const ModelConfig& c = model->config();
  const KSmoothingAtLoad a = k_smoothing_at_load(*be, model->tokenizer());
  const KSmoothingAtLoad b = k_smoothing_at_load(*be, model->tokenizer());
  EXPECT_GT(a.tokens, 200);
  ASSERT_EQ(int64_t(a.factors.size()), c.n_layers);
  EXPECT_EQ(a.factors, b.factors);  // bit for bit: same text, same forward
  bool any_not_one = false;
  for (const std::vector<float>& s : a.factors) {
    ASSERT_EQ(int64_t(s.size()), c.kv_dim());
    for (int64_t h = 0; h < c.n_kv_heads; ++h) {
      double log_sum = 0;
      for (int64_t d = 0; d < c.head_dim; ++d) {
        const float f = s[size_t(h * c.head_dim + d)];
        ASSERT_TRUE(std::isfinite(f) && f > 0) << f;
        log_sum += std::log(double(f));
        any_not_one = any_not_one || std::fabs(f - 1) > 0.05;
      }
      EXPECT_NEAR(log_sum / double(c.head_dim), 0.0, 1e-4);
    }
  }
  EXPECT_TRUE(any_not_one) << "the factors did nothing";
  // A mixed precision: the factors land on the layers with a quantized K only, the same as the pass alone gives.
  std::vector<KvLayerTypes> mixed(size_t(c.n_layers), KvLayerTypes{KvDtype::f16, KvDtype::f16});
  mixed[1] = {KvDtype::int8, KvDtype::f16};
  mixed[3] = {KvDtype::int4, KvDtype::int8};
  KvPrecision p{mixed};
  const KSmoothingAtLoad r = apply_k_smoothing_at_load(p, *be, model->tokenizer());
  EXPECT_EQ(r.tokens, a.tokens);
  ASSERT_EQ(int64_t(p.k_smooth.size()), c.n_layers);
  for (int64_t l = 0; l < c.n_layers; ++l)
    EXPECT_EQ(p.k_smooth[size_t(l)].empty(), !kv_dtype_quantized(mixed[size_t(l)].k)) << l;
  EXPECT_EQ(p.k_smooth[1], a.factors[1]);
  KvPrecision f16 = KvPrecision::uniform(c.n_layers, KvDtype::f16);
  EXPECT_EQ(apply_k_smoothing_at_load(f16, *be, model->tokenizer()).tokens, 0);
  EXPECT_TRUE(f16.k_smooth.empty());
}

TEST(KSmoothingAtLoad, Int8KCloserToF32WithTheLoadTimeFactors) {
  const std::string path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  const std::string text = test::read_shared_text("corpus/tinystories-valid-head.txt");
  ASSERT_GT(text.size(), 6000u);
  ThreadPool pool(2);
  auto be = create_backend("cpu", *model, BackendOptions{.pool = &pool});
  const int64_t L = model->config().n_layers, V = model->config().n_vocab;
  const std::vector<int32_t> eval = model->tokenizer().encode(text.substr(0, 6000), true);
  const int64_t rows = std::min<int64_t>(int64_t(eval.size()), 512);
  const std::vector<int32_t> toks(eval.begin(), eval.begin() + rows);
  auto logits = [&](KvPrecision p) {
    Session s(*be, rows, p);
    std::vector<float> out;
    s.feed_all_logits(toks, out);
    return out;
  };
  const auto base = logits(KvPrecision::uniform(L, KvDtype::f32));
  KvPrecision plain = KvPrecision::uniform(L, KvDtype::int8, KvDtype::f32), smoothed = plain;
  ASSERT_GT(apply_k_smoothing_at_load(smoothed, *be, model->tokenizer()).tokens, 0);
  const double kl_plain = mean_kl(base, logits(plain), rows, V);
  const double kl_smooth = mean_kl(base, logits(smoothed), rows, V);
  EXPECT_LT(kl_smooth, 0.7 * kl_plain) << "int8 K: KL " << kl_plain << " plain, " << kl_smooth << " smoothed at load";
  std::printf("int8 K, f32 V on stories260K (%lld tokens): mean KL %.3g plain, %.3g smoothed at load\n",
              (long long)rows, kl_plain, kl_smooth);
}

}  // namespace
}  // namespace tinfer

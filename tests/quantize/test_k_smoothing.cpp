// K smoothing (quantize/k_smoothing.h, applied by CpuForward from KvPrecision::k_smooth): the factors' formula
// (alpha, floor, per-head geometric mean 1), q.k unchanged on an f32 cache, and on stories260K an int4 K cache
// moving closer to the f32 cache's next-token distributions (lower KL) with the calibrated factors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "common/logits_kl.h"
#include "common/test_env.h"
#include "tinfer/error.h"
#include "core/thread_pool.h"
#include "engine/session.h"
#include "backend/backend.h"
#include "model/model.h"
#include "quantize/k_smoothing.h"

namespace tinfer {
namespace {

TEST(KSmoothing, FactorsFollowTheFormula) {
  QkAbsMax st;  // one layer, two kv heads of head_dim 2
  st.k = {{4.f, 1.f, 0.001f, 2.f}};
  st.q = {{1.f, 4.f, 1.f, 1.f}};
  // alpha 1: s = max|k|, floored at 0.05 x the head's largest, geometric mean 1 per head.
  auto s = k_smoothing_factors(st, 2, 1.0, 0.05);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NEAR(s[0][0], 4 / std::sqrt(4.0), 1e-5);
  EXPECT_NEAR(s[0][1], 1 / std::sqrt(4.0), 1e-5);
  EXPECT_NEAR(s[0][2], 0.1 / std::sqrt(0.1 * 2), 1e-5);  // 0.001 floored to 0.05 x 2
  EXPECT_NEAR(s[0][3], 2 / std::sqrt(0.1 * 2), 1e-5);
  // alpha 0.5: s = sqrt(max|k| / max|q|): head 0 -> sqrt(4), sqrt(1/4) -> normalised 2, 0.5.
  s = k_smoothing_factors(st, 2, 0.5, 0.05);
  EXPECT_NEAR(s[0][0], 2.0, 1e-5);
  EXPECT_NEAR(s[0][1], 0.5, 1e-5);
  EXPECT_THROW(k_smoothing_factors(st, 2, 1.5, 0.05), Error);
}

using test::mean_kl;

TEST(KSmoothing, KeepsF32AttentionAndBringsInt4KCloserToF32) {
  const std::string path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  const std::string text = test::read_shared_text("corpus/tinystories-valid-head.txt");
  ASSERT_GT(text.size(), 6000u);
  const std::vector<int32_t> toks = model->tokenizer().encode(text.substr(0, 6000), true);
  const std::vector<int32_t> calib(toks.begin() + 600, toks.end()), eval(toks.begin(), toks.begin() + 512);
  KSmoothOptions o;
  o.threads = 2;
  const auto smooth = k_smoothing_factors(collect_qk_absmax(*model, calib, o), model->config().head_dim, 0.5, 0.05);
  ThreadPool pool(2);
  auto be = create_backend("cpu", *model, BackendOptions{.pool = &pool});
  const int64_t L = model->config().n_layers, V = model->config().n_vocab, rows = int64_t(eval.size());
  auto logits = [&](KvDtype k, bool smoothed) {
    KvPrecision p = KvPrecision::uniform(L, k, KvDtype::f32);
    if (smoothed) p.k_smooth = smooth;
    Session s(*be, rows, p);
    std::vector<float> out;
    s.feed_all_logits(eval, out);
    return out;
  };
  const auto base = logits(KvDtype::f32, false);
  const auto f32_smooth = logits(KvDtype::f32, true);
  double worst = 0;
  for (size_t i = 0; i < base.size(); ++i) worst = std::max(worst, double(std::fabs(base[i] - f32_smooth[i])));
  EXPECT_LT(worst, 1e-3) << "smoothing changed f32 attention";
  const double kl_plain = mean_kl(base, logits(KvDtype::int4, false), rows, V);
  const double kl_smooth = mean_kl(base, logits(KvDtype::int4, true), rows, V);
  EXPECT_LT(kl_smooth, 0.7 * kl_plain) << "int4 K: KL " << kl_plain << " plain, " << kl_smooth << " smoothed";
  std::printf("int4 K, f32 V on stories260K (512 tokens): mean KL %.5f plain, %.5f smoothed\n", kl_plain, kl_smooth);
}

}  // namespace
}  // namespace tinfer

// AWQ and SmoothQuant folds: exact in float (logits unchanged before rounding), statistics rescaled to
// exactly what a new calibration of the folded model measures, searches never worse than no scales.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "common/test_env.h"
#include "model/model.h"
#include "backend/cpu/reference_forward.h"
#include "model/synth/synth.h"
#include "quantize/calib_stats.h"
#include "quantize/float_model.h"
#include "quantize/methods.h"
#include "quantize/scale_fold.h"

namespace tinfer {
namespace {

std::vector<std::vector<float>> float_logits(const FloatModel& fm, const Model& meta, const std::vector<int32_t>& toks) {
  auto m = Model::from_gguf_bytes(float_model_gguf(fm, meta.gguf()));
  return ReferenceForward(*m).logits(toks);
}

// Max |a - b| over max |a|.
double rel_diff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  double d = 0, top = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) {
      d = std::max(d, double(std::fabs(a[i][j] - b[i][j])));
      top = std::max(top, double(std::fabs(a[i][j])));
    }
  return d / top;
}

std::unique_ptr<Model> mha_synth() {
  SynthSpec s;
  s.dim = 64, s.n_layers = 2, s.n_heads = 4, s.n_kv_heads = 4, s.ffn_dim = 128, s.n_vocab = 300, s.seed = 5;
  s.weight_std = 0.1f;
  return Model::from_gguf_bytes(synthesize_model_bytes(s));
}

std::unique_ptr<Model> stories() {
  const std::string p = test::shared_file("models/stories260K.gguf");
  return p.empty() ? nullptr : Model::load(p);
}

std::vector<int32_t> stories_tokens(const Model& m, size_t offset, size_t bytes) {
  std::ifstream f(test::shared_file("corpus/tinystories-valid-head.txt"), std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return m.tokenizer().encode(ss.str().substr(offset, bytes), true);
}

std::vector<int32_t> synth_tokens(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& v : t) v = int32_t(3 + rng() % 290);
  return t;
}

CalibOptions small_calib() {
  CalibOptions o;
  o.max_tokens = 256, o.ctx = 64, o.sample_rows = 64, o.threads = 2;
  return o;
}

// Every fold with random scales, including v -> o (multi-head model): logits unchanged.
TEST(ScaleFold, RandomScalesKeepTheFloatModel) {
  auto model = mha_synth();
  FloatModel fm = load_float_model(*model);
  EXPECT_FALSE(fm.requantized);
  const std::vector<int32_t> toks = synth_tokens(24, 1);
  const auto before = float_logits(fm, *model, toks);
  CalibStats stats = collect_calib_stats(*model, synth_tokens(200, 2), small_calib());
  std::mt19937 rng(9);
  std::lognormal_distribution<double> ln(0.0, 1.0);
  const auto groups = quantize_detail::fold_groups(fm, stats);
  ASSERT_EQ(groups.size(), 8u);
  for (const auto& g : groups) {
    ASSERT_TRUE(g.skip.empty()) << g.label;
    std::vector<double> s(static_cast<size_t>(g.stats->cols));
    for (double& v : s) v = ln(rng);
    quantize_detail::apply_fold(fm, g, s);
  }
  EXPECT_LT(rel_diff(before, float_logits(fm, *model, toks)), 2e-5);
}

// The folded model recalibrated measures what the rescaled statistics say.
void expect_same_stats(const CalibStats& a, const CalibStats& b) {
  for (const auto& [name, sa] : a) {
    SCOPED_TRACE(name);
    const InputStats& x = *sa;
    const InputStats& y = *b.at(name);
    const int64_t n = x.cols;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(x.sum_abs[i], y.sum_abs[i], 1e-4 * y.sum_abs[i] + 1e-9);
      ASSERT_NEAR(x.sum_sq[i], y.sum_sq[i], 1e-4 * y.sum_sq[i] + 1e-12);
      ASSERT_NEAR(x.max_abs[i], y.max_abs[i], 1e-4 * y.max_abs[i] + 1e-9);
      for (int64_t j = 0; j < n; ++j)
        ASSERT_NEAR(x.xtx[i * n + j], y.xtx[i * n + j], 1e-4 * std::sqrt(y.xtx[i * n + i] * y.xtx[j * n + j]) + 1e-12);
    }
    for (size_t k = 0; k < x.sample.size(); ++k) ASSERT_NEAR(x.sample[k], y.sample[k], 1e-4 * y.max_abs[k % n] + 1e-7);
  }
}

void check_method(const Model& model, const std::vector<int32_t>& calib, const std::vector<int32_t>& eval, bool awq,
                  DType type, size_t expect_folds_at_most, ScaleSearchOptions so = {}) {
  FloatModel fm = load_float_model(model);
  const CalibOptions co = small_calib();
  CalibStats stats = collect_calib_stats(model, calib, co);
  const auto before = float_logits(fm, model, eval);
  so.threads = 2;
  const std::vector<ScaleFold> rep = awq ? awq_apply(fm, stats, type, so) : smoothquant_apply(fm, stats, type, so);
  ASSERT_EQ(rep.size(), size_t(4 * model.config().n_layers));
  size_t folded = 0;
  for (const ScaleFold& f : rep) {
    std::printf("  %-28s alpha %.3f  err %.4e -> %.4e %s%s\n", f.group.c_str(), f.alpha, f.err_plain, f.err_scaled,
                f.folded ? "folded" : "", f.note.c_str());
    EXPECT_LE(f.err_scaled, f.err_plain) << f.group;
    if (f.folded) {
      ++folded;
      EXPECT_TRUE(f.note.empty()) << f.group;
    } else if (f.err_plain == 0) {
      EXPECT_FALSE(f.note.empty()) << f.group;  // skipped groups say why
    }
  }
  EXPECT_GT(folded, 0u);
  EXPECT_LE(folded, expect_folds_at_most);
  EXPECT_LT(rel_diff(before, float_logits(fm, model, eval)), 2e-5);
  auto folded_model = Model::from_gguf_bytes(float_model_gguf(fm, model.gguf()));
  expect_same_stats(stats, collect_calib_stats(*folded_model, calib, co));
}

TEST(Awq, Stories260K) {
  auto model = stories();
  TINFER_REQUIRE_FILE(model ? std::string("x") : std::string(), "stories260K.gguf");
  // GQA (8 heads / 4 kv heads): v -> o skipped; down reads 172 values (not whole Q4_0 blocks): skipped.
  check_method(*model, stories_tokens(*model, 600000, 3000), stories_tokens(*model, 100, 200), true, DType::Q4_0,
               2 * 5);
}

TEST(Awq, MultiHeadFoldsVIntoO) {
  auto model = mha_synth();
  check_method(*model, synth_tokens(256, 3), synth_tokens(20, 4), true, DType::Q4_0, 8);
}

TEST(SmoothQuant, Stories260K) {
  auto model = stories();
  TINFER_REQUIRE_FILE(model ? std::string("x") : std::string(), "stories260K.gguf");
  check_method(*model, stories_tokens(*model, 600000, 3000), stories_tokens(*model, 100, 200), false, DType::Q8_0,
               2 * 5);
}

TEST(SmoothQuant, MultiHead) {
  auto model = mha_synth();
  check_method(*model, synth_tokens(256, 3), synth_tokens(20, 4), false, DType::Q8_0, 8);
}

TEST(Awq, WeightedSearchQ4K) {
  SynthSpec s;
  s.dim = 256, s.n_layers = 1, s.n_heads = 4, s.n_kv_heads = 4, s.ffn_dim = 256, s.n_vocab = 300, s.seed = 6;
  s.weight_std = 0.1f;
  auto model = Model::from_gguf_bytes(synthesize_model_bytes(s));
  ScaleSearchOptions so;
  so.weighted = true, so.n_grid = 8;
  check_method(*model, synth_tokens(256, 3), synth_tokens(12, 4), true, DType::Q4_K, 4, so);
}

// AWQ whose loss includes the runtime's int8 activation rounding: still an exact fold, never worse than no
// scales under that loss, and the loss is the larger one (it adds the activations' rounding).
TEST(Awq, ActQuantLoss) {
  auto model = mha_synth();
  ScaleSearchOptions so;
  so.act_quant = true;
  check_method(*model, synth_tokens(256, 3), synth_tokens(20, 4), true, DType::Q4_0, 8, so);
  FloatModel a = load_float_model(*model), b = load_float_model(*model);
  CalibStats sa = collect_calib_stats(*model, synth_tokens(256, 3), small_calib());
  CalibStats sb = collect_calib_stats(*model, synth_tokens(256, 3), small_calib());
  so.threads = 2;
  const auto with = awq_apply(a, sa, DType::Q4_0, so);
  so.act_quant = false;
  const auto without = awq_apply(b, sb, DType::Q4_0, so);
  ASSERT_EQ(with.size(), without.size());
  for (size_t i = 0; i < with.size(); ++i)
    if (with[i].note.empty() || with[i].folded) {
      EXPECT_GT(with[i].err_plain, without[i].err_plain) << with[i].group;
    }
}

TEST(SmoothQuant, PerToken) {
  auto model = mha_synth();
  ScaleSearchOptions so;
  so.per_token = true;
  check_method(*model, synth_tokens(256, 3), synth_tokens(20, 4), false, DType::Q8_0, 8, so);
}

// The held-out half: a group's alpha is fitted on the first half of the sample rows and folded only if it also
// wins on the second. Here the second half's rows lose their loudest quarter of channels (by mean |x|, which sets
// the scales) and have the quietest quarter raised 30x: the scales that protect the loud channels of the fit
// half now cost the held-out half precision where its energy is, so the fit half's alphas are refused.
TEST(Awq, HeldOutHalfRefusesScalesThatDoNotCarryOver) {
  auto model = mha_synth();
  FloatModel fm = load_float_model(*model);
  const FloatModel before = fm;
  CalibStats stats = collect_calib_stats(*model, synth_tokens(256, 3), small_calib());
  std::vector<InputStats*> done;
  for (auto& [name, st] : stats) {
    InputStats& x = *st;
    if (std::find(done.begin(), done.end(), &x) != done.end()) continue;
    done.push_back(&x);
    std::vector<int64_t> order(size_t(x.cols));
    for (int64_t c = 0; c < x.cols; ++c) order[size_t(c)] = c;
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return x.sum_abs[a] > x.sum_abs[b]; });
    std::vector<float> gain(size_t(x.cols), 1.0f);
    for (int64_t k = 0; k < x.cols / 4; ++k) gain[size_t(order[size_t(k)])] = 0.0f, gain[size_t(order[size_t(x.cols - 1 - k)])] = 30.0f;
    for (int64_t r = x.sample_rows / 2; r < x.sample_rows; ++r)
      for (int64_t c = 0; c < x.cols; ++c) x.sample[size_t(r * x.cols + c)] *= gain[size_t(c)];
  }
  ASSERT_GE(stats.begin()->second->sample_rows, 2 * kMinHeldOutRows);
  ScaleSearchOptions so;
  so.threads = 2;
  const std::vector<ScaleFold> rep = awq_apply(fm, stats, DType::Q4_0, so);
  int refused = 0, folded = 0;
  for (const ScaleFold& f : rep) {
    std::printf("  %-28s alpha %.3f  fit %.4e -> %.4e  held out %.4e -> %.4e %s\n", f.group.c_str(), f.alpha,
                f.err_plain, f.err_scaled, f.err_held_plain, f.err_held_scaled, f.note.c_str());
    if (f.note.find("lost on the held-out rows") != std::string::npos) {
      ++refused;
      EXPECT_FALSE(f.folded);
      EXPECT_EQ(f.alpha, 0.0);
      EXPECT_EQ(f.err_scaled, f.err_plain);
    }
    if (f.folded) {
      ++folded;
      EXPECT_LT(f.err_held_scaled, f.err_held_plain) << f.group;
    }
  }
  EXPECT_GT(refused, 0);
  if (folded == 0) {
    for (const auto& [name, t] : before.tensors) EXPECT_EQ(t.data, fm.tensors.at(name).data) << name;
  }
  // Without the check the same statistics fold more groups (alpha fitted and accepted on all the rows).
  FloatModel fm2 = load_float_model(*model);
  so.held_out = false;
  int folded_without = 0;
  for (const ScaleFold& f : awq_apply(fm2, stats, DType::Q4_0, so)) folded_without += f.folded;
  EXPECT_GT(folded_without, folded);
}

TEST(Awq, ReportsSkippedGroups) {
  auto model = stories();
  TINFER_REQUIRE_FILE(model ? std::string("x") : std::string(), "stories260K.gguf");
  FloatModel fm = load_float_model(*model);
  CalibStats stats = collect_calib_stats(*model, stories_tokens(*model, 600000, 2000), small_calib());
  const auto rep = awq_apply(fm, stats, DType::Q4_0, ScaleSearchOptions{4, 32, false, false, 2});
  EXPECT_NE(rep[1].note.find("grouped-query"), std::string::npos) << rep[1].note;
  EXPECT_NE(rep[3].note.find("172"), std::string::npos) << rep[3].note;
  EXPECT_FALSE(rep[1].folded);
}

}  // namespace
}  // namespace tinfer

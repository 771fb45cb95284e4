// tinfer calibrate-kv and --kv-plan end to end on stories260K (5 layers, runs in seconds): the plan written is
// within its budget as measured, mixes types across layers, and is what its file says; ppl, run, bench and
// bench throughput apply it (their outputs name the mixed types) and refuse it for another model -- a
// synthetic model with stories260K's exact shapes but other weights -- and beside --kv-dtype-k/-v; the
// command's own refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "calib_test_util.h"
#include "common/test_env.h"
#include "golden/golden_util.h"
#include "plans/kv_plan_file.h"
#include "model/model_identity.h"
#include "model/synth/synth.h"

namespace tinfer::cli {
namespace {

namespace fs = std::filesystem;
using calib_test::expect_error;
using calib_test::tinfer;
std::string tmp(const std::string& name) { return calib_test::tmp("tinfer_kvcal_", name); }
std::string stories_calib_text() { return calib_test::stories_calib_text(tmp("calib.txt")); }
using nlohmann::json;

// The plan is calibrated once per process, by the first test that needs it (ctest runs each test alone).
class CalibrateKv : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = test::shared_file("models/stories260K.gguf");
    TINFER_REQUIRE_FILE(model_, "models/stories260K.gguf");
    TINFER_REQUIRE_FILE(test::shared_file("corpus/tinystories-valid-head.txt"), "corpus/tinystories-valid-head.txt");
  }
  static void TearDownTestSuite() {
    if (!plan_.empty()) fs::remove(plan_);
  }
  // Budget 0.002 on this text: between uniform int8 (KLD ~0.0016) and int8 K / int4 V (~0.0026), so the plan
  // must mix types across layers.
  const std::string& calibrated_plan() {
    if (plan_.empty()) {
      plan_ = tmp("plan.json");
      const std::string calib = stories_calib_text();
      calib_out_ = tinfer("calibrate-kv -m " + model_ + " --calib " + calib + " --calib-tokens 1024 --ctx 256 " +
                          "--budget-kld 0.002 --k-smooth off -t 2 -o " + plan_ + " --json");
      fs::remove(calib);
    }
    EXPECT_EQ(calib_out_.status, 0) << calib_out_.out;
    return plan_;
  }
  std::string model_;
  static std::string plan_;
  static test::RunResult calib_out_;
};
std::string CalibrateKv::plan_;
test::RunResult CalibrateKv::calib_out_;

TEST_F(CalibrateKv, WritesAMixedPlanWithinItsBudget) {
  const KvPlanFile plan = read_kv_plan(calibrated_plan());
  check_kv_plan_model(plan, read_model_identity(model_), "plan");
  ASSERT_EQ(plan.precision.n_layers(), 5);
  EXPECT_FALSE(plan.precision.is_uniform()) << plan.precision.describe();
  bool lowered = false;
  for (const KvLayerTypes& t : plan.precision.layers) lowered |= kv_dtype_quantized(t.k) || kv_dtype_quantized(t.v);
  EXPECT_TRUE(lowered);
  const json& c = plan.calibration;
  EXPECT_EQ(c["metric"], "kld_mean");
  EXPECT_DOUBLE_EQ(c["budget"].get<double>(), 0.002);
  EXPECT_TRUE(c["within_budget"].get<bool>());
  EXPECT_LE(c["measured"]["kld_mean"].get<double>(), 0.002);
  EXPECT_GT(c["measured"]["kld_mean"].get<double>(), 0.0);
  EXPECT_EQ(c["tokens"], 1023);
  EXPECT_EQ(c["bytes_per_token"], plan.precision.bytes_per_token(4, 8));
  EXPECT_LT(c["bytes_per_token"].get<int64_t>(), c["bytes_per_token_f16"].get<int64_t>());
  ASSERT_EQ(c["sensitivity"].size(), 5u);  // every layer's K and V, each type
  for (const json& row : c["sensitivity"])
    for (const char* kv : {"k", "v"})
      for (const char* t : {"int8", "int4"}) EXPECT_GE(row[kv][t]["kld_mean"].get<double>(), 0.0) << row.dump();
  // The table and the last JSON line agree with the file.
  EXPECT_NE(calib_out_.out.find("| layer | K int8 | K int4 | V int8 | V int4 | chosen K | chosen V |"), std::string::npos);
  std::string out = calib_out_.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const json j = json::parse(out.substr(out.rfind('\n') + 1));
  EXPECT_EQ(j["kv_types"], plan.precision.describe());
  EXPECT_EQ(j["kld_mean"], c["measured"]["kld_mean"]);
}

// ppl --kv-plan against an f32-cache base on the calibration text and windows reproduces the KLD calibrate-kv
// measured for the plan (the same tokens: 1023 targets, windows of 256); run, bench and bench throughput name
// the plan's types in their KV lines.
TEST_F(CalibrateKv, PplRunBenchAndThroughputApplyThePlan) {
  const KvPlanFile plan = read_kv_plan(calibrated_plan());
  const std::string desc = plan.precision.describe();
  ASSERT_EQ(desc.rfind("mixed:", 0), 0u) << desc;
  const std::string calib = stories_calib_text(), base = tmp("base.logits");
  const std::string ppl = "ppl -m " + model_ + " -f " + calib + " --max-tokens 1023 -t 2 ";
  auto f = tinfer(ppl + "--ctx 256 --save-logits " + base);
  ASSERT_EQ(f.status, 0) << f.out;
  auto p = tinfer(ppl + "--kld-base " + base + " --json --kv-plan " + plan_);
  fs::remove(base), fs::remove(calib);
  ASSERT_EQ(p.status, 0) << p.out;
  EXPECT_NE(p.out.find("kv " + desc), std::string::npos) << p.out;
  const json q = json::parse(p.out.substr(p.out.rfind("\n{") + 1));
  EXPECT_EQ(q["tokens"], 1023);
  EXPECT_NEAR(q["kld_mean"].get<double>(), plan.calibration["measured"]["kld_mean"].get<double>(), 1e-5) << p.out;
  auto r = tinfer("run -m " + model_ + " -p 'Once upon a time' -n 8 -t 2 --kv-plan " + plan_);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("KV cache: " + desc), std::string::npos) << r.out;
  auto b = tinfer("bench -m " + model_ + " --prompt 16 --gen 4 --repeat 1 -t 2 --json --kv-plan " + plan_);
  ASSERT_EQ(b.status, 0) << b.out;
  EXPECT_NE(b.out.find(desc), std::string::npos) << b.out;
  auto t = tinfer("bench throughput -m " + model_ + " -t 2 --kv-memory 4M --requests 4 --input-len 16 " +
                  "--output-len 8 --kv-plan " + plan_);
  ASSERT_EQ(t.status, 0) << t.out;
  EXPECT_NE(t.out.find("(" + desc + ")"), std::string::npos) << t.out;  // the engine's KV start-up line
}

TEST_F(CalibrateKv, EverySubcommandRefusesAnotherModelsPlan) {
  // Same shapes as stories260K (so only the fingerprint can tell), other weights.
  const std::string other = tmp("other.gguf");
  SynthSpec s;
  s.dim = 64, s.n_layers = 5, s.n_heads = 8, s.n_kv_heads = 4, s.ffn_dim = 172, s.n_vocab = 512, s.ctx_len = 512;
  synthesize_model(s, other, 1);
  ASSERT_EQ(read_model_identity(other).n_kv_heads, read_model_identity(model_).n_kv_heads);
  calibrated_plan();
  const std::string want = "KV plan '" + plan_ + "' was made for another model";
  expect_error("ppl -m " + other + " -f " + plan_ + " --kv-plan " + plan_, want);
  expect_error("run -m " + other + " -p hi -n 2 --kv-plan " + plan_, want);
  expect_error("bench -m " + other + " --prompt 8 --gen 2 --repeat 1 --kv-plan " + plan_, want);
  expect_error("bench throughput -m " + other + " --kv-memory 4M --requests 2 --kv-plan " + plan_, want);
  expect_error("serve -m " + other + " --port 0 --kv-plan " + plan_, want);
  fs::remove(other);
}

TEST_F(CalibrateKv, RefusesBadFlagsAndPlans) {
  const std::string plan_ = model_;  // refused before the plan is read
  expect_error("run -m " + model_ + " -p hi --kv-plan " + plan_ + " --kv-dtype-k int8", "cannot be combined");
  expect_error("ppl -m " + model_ + " -f " + plan_ + " --kv-plan " + plan_ + " --kv-dtype f16", "cannot be combined");
  expect_error("run -m " + model_ + " -p hi --kv-plan /nonexistent.json", "cannot read KV plan '/nonexistent.json'");
  const std::string bad = tmp("bad.json");
  std::ofstream(bad) << "{\"format\":\"tinfer-kv-plan\",\"version\":1,";
  expect_error("run -m " + model_ + " -p hi --kv-plan " + bad, "not valid JSON");
  fs::remove(bad);
  const std::string c = "calibrate-kv -m " + model_ + " -o " + tmp("never.json");
  expect_error(c, "give exactly one of --budget-kld X");
  expect_error(c + " --budget-kld 0.1 --budget-ppl 1", "give exactly one of --budget-kld X");
  expect_error(c + " --budget-kld -1", "--budget-kld must be a number >= 0");
  expect_error(c + " --budget-ppl 1%x", "--budget-ppl must be a number >= 0 (or a percentage)");
  expect_error(c + " --budget-kld 0.1 --types int8,f16", "--types lists quantized KV types (int8, int4), got 'f16'");
  expect_error(c + " --budget-kld 0.1 --types int8,int8", "--types names 'int8' twice");
  expect_error(c + " --budget-kld 0.1 --calib /nonexistent.txt", "cannot read calibration file '/nonexistent.txt'");
  EXPECT_FALSE(fs::exists(tmp("never.json")));
}

// K smoothing (on by default, alpha 0.5): the uniform int4 plan measured with it is closer to the f32 cache
// than without, and its factors travel in the plan (one positive factor per layer, kv head and dimension).
TEST_F(CalibrateKv, KSmoothingLowersInt4KldAndTravelsInThePlan) {
  const std::string calib = stories_calib_text(), on = tmp("ks-on.json"), off = tmp("ks-off.json");
  const std::string c = "calibrate-kv -m " + model_ + " --calib " + calib + " --calib-tokens 512 --ctx 256 --types int4 " +
                        "--budget-kld 10 -t 2 ";
  auto a = tinfer(c + "-o " + on), b = tinfer(c + "--k-smooth off -o " + off);
  fs::remove(calib);
  ASSERT_EQ(a.status, 0) << a.out;
  ASSERT_EQ(b.status, 0) << b.out;
  const KvPlanFile with = read_kv_plan(on), without = read_kv_plan(off);
  fs::remove(on), fs::remove(off);
  EXPECT_EQ(with.precision.describe(), "int4 +k-smooth");
  EXPECT_EQ(without.precision.describe(), "int4");
  ASSERT_EQ(with.precision.k_smooth.size(), 5u);
  for (const auto& layer : with.precision.k_smooth) {
    ASSERT_EQ(layer.size(), 32u);  // 4 kv heads x head_dim 8
    for (float f : layer) EXPECT_GT(f, 0.f);
  }
  const double kl_on = with.calibration["measured"]["kld_mean"].get<double>();
  const double kl_off = without.calibration["measured"]["kld_mean"].get<double>();
  EXPECT_LT(kl_on, 0.8 * kl_off) << "int4 KLD " << kl_on << " with K smoothing, " << kl_off << " without";
}

// A budget no lowering fits (0: not even f16's rounding): the all-f32 plan is written, and the output says so.
TEST_F(CalibrateKv, ZeroBudgetWritesTheF32Plan) {
  const std::string out = tmp("zero.json");
  const std::string calib = stories_calib_text();
  auto r = tinfer("calibrate-kv -m " + model_ + " --calib " + calib + " --calib-tokens 256 --ctx 128 --budget-kld 0 -t 2 -o " + out);
  fs::remove(calib);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("no lowering fits the budget"), std::string::npos) << r.out;
  const KvPlanFile p = read_kv_plan(out);
  EXPECT_EQ(p.precision, KvPrecision::uniform(5, KvDtype::f32));
  EXPECT_EQ(p.calibration["measured"]["kld_mean"].get<double>(), 0.0);
  fs::remove(out);
}

}  // namespace
}  // namespace tinfer::cli

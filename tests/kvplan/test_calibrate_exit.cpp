// Early exit's tools: the bytes-per-token model on made-up sizes (exact), and on stories260K (5 layers, seconds):
// calibrate-exit finds a threshold within its budget that ppl --early-exit reproduces against the base on the
// same text and windows; ppl, bench and bench throughput report what early exit did; bad flags are refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "calib_test_util.h"
#include "common/test_env.h"
#include "plans/exit_cost.h"
#include "golden/golden_util.h"

namespace tinfer::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(ExitCost, CountsLayersHeadsAndStateCopying) {
  ExitCostModel m{{10, 10, 10, 10}, {2, 2, 2, 2}, 5};
  EXPECT_DOUBLE_EQ(m.full(), 45);
  EarlyExitCounters c;
  c.eligible = 4, c.exited = 3, c.exited_after = {0, 1, 0, 2};
  // 1 token runs all (45) + 2 exit heads (10); 1 exits after 1 layer: 10 + head 5 + qkv of layers 1..3 (6) = 21;
  // 2 exit after 3 layers: 30 + 2 heads (10) + qkv of layer 3 (2) = 42 each.
  EXPECT_DOUBLE_EQ(m.mean({1, 3}, c), (55.0 + 21.0 + 2 * 42.0) / 4);
  EXPECT_DOUBLE_EQ(m.mean({1, 3}, EarlyExitCounters{}), 45);
  EXPECT_DOUBLE_EQ(c.mean_layers(4), (4.0 + 1.0 + 2 * 3.0) / 4);
}

using calib_test::expect_error;
using calib_test::last_json;
using calib_test::tinfer;
std::string tmp(const std::string& name) { return calib_test::tmp("tinfer_exitcal_", name); }

class CalibrateExit : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = test::shared_file("models/stories260K.gguf");
    TINFER_REQUIRE_FILE(model_, "models/stories260K.gguf");
    text_ = test::shared_file("corpus/tinystories-valid-head.txt");
    TINFER_REQUIRE_FILE(text_, "corpus/tinystories-valid-head.txt");
  }
  std::string model_, text_;
};

// Budget 0.1 nats of mean KLD, exits after 4 of 5 layers: the threshold found is below 0.9999 (some tokens
// exit), and ppl --early-exit with it measures the same KLD and share against the base on the same tokens.
TEST_F(CalibrateExit, FindsAThresholdWithinBudgetThatPplReproduces) {
  const std::string calib = calib_test::stories_calib_text(tmp("calib.txt"), 6000), base = tmp("base.logits");
  auto c = tinfer("calibrate-exit -m " + model_ + " --calib " + calib + " --calib-tokens 256 --ctx 256 --layers 4 "
                  "--budget-kld 0.1 -t 2 --json");
  ASSERT_EQ(c.status, 0) << c.out;
  const json r = last_json(c.out);
  ASSERT_TRUE(r["within_budget"].get<bool>()) << c.out;
  EXPECT_LE(r["kld_mean"].get<double>(), 0.1);
  EXPECT_GT(r["exit_share"].get<double>(), 0.0) << c.out;
  EXPECT_EQ(r["exit_layers"], "4");
  const double t = r["threshold"].get<double>();
  EXPECT_GT(t, 0.5);
  EXPECT_LT(t, 0.9999);
  EXPECT_NE(c.out.find("| exit after | threshold | tokens exiting |"), std::string::npos);

  const std::string ppl = "ppl -m " + model_ + " -f " + calib + " --max-tokens 255 --ctx 256 -t 2 ";
  auto b = tinfer(ppl + "--save-logits " + base);
  ASSERT_EQ(b.status, 0) << b.out;
  char thr[32];
  std::snprintf(thr, sizeof thr, "%.9g", t);
  auto p = tinfer(ppl + "--kld-base " + base + " --json --exit-layers 4 --early-exit " + thr);
  ASSERT_EQ(p.status, 0) << p.out;
  const json q = last_json(p.out);
  EXPECT_EQ(q["tokens"], 255);
  EXPECT_NEAR(q["kld_mean"].get<double>(), r["kld_mean"].get<double>(), 1e-4) << p.out;
  EXPECT_NEAR(q["early_exit_share"].get<double>(), r["exit_share"].get<double>(), 1e-9) << p.out;
  EXPECT_NE(p.out.find("early exit     p>"), std::string::npos) << p.out;
  fs::remove(calib), fs::remove(base);
}

// Threshold 0 exits every decode step at the first exit layer: bench and bench throughput say so.
TEST_F(CalibrateExit, BenchAndThroughputReportExits) {
  auto b = tinfer("bench -m " + model_ + " --prompt 16 --gen 8 --repeat 1 -t 2 --json --early-exit 0 --exit-layers 2,4");
  ASSERT_EQ(b.status, 0) << b.out;
  EXPECT_NE(b.out.find("early exit   p>0 after 2,4: 100.0% of"), std::string::npos) << b.out;
  EXPECT_EQ(last_json(b.out)["early_exit"], "p>0 after 2,4");
  auto t = tinfer("bench throughput -m " + model_ + " -t 2 --kv-memory 4M --requests 4 --input-len 16 --output-len 8 "
                  "--early-exit 0 --exit-layers 3 --json");
  ASSERT_EQ(t.status, 0) << t.out;
  const json j = last_json(t.out);
  EXPECT_GT(j["early_exit_rows"].get<int64_t>(), 0);
  EXPECT_EQ(j["early_exit_exited"], j["early_exit_rows"]);
  EXPECT_DOUBLE_EQ(j["early_exit_mean_layers"].get<double>(), 3.0);
}

TEST_F(CalibrateExit, RefusesBadFlags) {
  expect_error("run -m " + model_ + " -p hi --early-exit 1.5", "--early-exit must be a probability in [0, 1]");
  expect_error("run -m " + model_ + " -p hi --early-exit 0.5 --exit-layers 3,2", "--exit-layers must be ascending");
  expect_error("run -m " + model_ + " -p hi --exit-layers 3", "--exit-layers needs --early-exit THRESHOLD");
  expect_error("run -m " + model_ + " -p hi --early-exit 0.5 --exit-layers 5", "exit layer 5 outside [1, 4]");
  expect_error("bench throughput -m " + model_ + " --kv-memory 4M --early-exit x", "--early-exit must be a probability");
  expect_error("calibrate-exit -m " + model_, "give exactly one of --budget-kld X");
  expect_error("calibrate-exit -m " + model_ + " --budget-kld 0.1 --layers 0", "--exit-layers lists layer counts >= 1");
}

}  // namespace
}  // namespace tinfer::cli

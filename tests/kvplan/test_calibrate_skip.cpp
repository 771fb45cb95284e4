// tinfer calibrate-skip and --skip-plan end to end on stories260K (5 layers, runs in seconds): the plan written
// is within its budget as measured and skips something; ppl --kld-base reproduces the measured KLD; ppl, run,
// bench, bench throughput and serve apply a plan (the engine's KV line shrinks by exactly the layers whose
// attention is skipped) and refuse one made for another model -- a synthetic model with stories260K's exact
// shapes but other weights -- and a malformed one; the command's own refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "calib_test_util.h"
#include "common/test_env.h"
#include "golden/golden_util.h"
#include "model/model_identity.h"
#include "model/synth/synth.h"
#include "plans/skip_plan_file.h"

namespace tinfer::cli {
namespace {

namespace fs = std::filesystem;
using calib_test::expect_error;
using calib_test::tinfer;
std::string tmp(const std::string& name) { return calib_test::tmp("tinfer_skipcal_", name); }
std::string stories_calib_text() { return calib_test::stories_calib_text(tmp("calib.txt")); }
using nlohmann::json;

// The engine's start-up line: "KV cache: N bytes/token (...)".
long long engine_kv_bytes(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("KV cache: ([0-9]+) bytes/token"))) return -1;
  return std::stoll(m[1]);
}

class CalibrateSkip : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = test::shared_file("models/stories260K.gguf");
    TINFER_REQUIRE_FILE(model_, "models/stories260K.gguf");
    TINFER_REQUIRE_FILE(test::shared_file("corpus/tinystories-valid-head.txt"), "corpus/tinystories-valid-head.txt");
  }
  // A hand-made plan for stories260K: layer 1's MLP, layer 2's attention, layer 3's both.
  std::string hand_plan() {
    SkipPlanFile p{read_model_identity(model_), LayerSkip::none(5), json::object()};
    p.skip.mlp[1] = 1, p.skip.attn[2] = 1, p.skip.attn[3] = p.skip.mlp[3] = 1;
    const std::string path = tmp("hand.json");
    write_skip_plan(p, path);
    return path;
  }
  std::string model_;
};

// Budget 0.3 (nats of mean KLD): every single block of this model costs 0.11-0.87 alone, so the plan skips some
// but not all. The plan as written, measured again by ppl against the base on the same windows, is within.
TEST_F(CalibrateSkip, WritesAPlanWithinItsBudgetThatPplReproduces) {
  const std::string calib = stories_calib_text(), plan = tmp("plan.json"), base = tmp("base.logits");
  auto c = tinfer("calibrate-skip -m " + model_ + " --calib " + calib + " --calib-tokens 1024 --ctx 256 " +
                  "--budget-kld 0.3 -t 2 -o " + plan + " --json");
  ASSERT_EQ(c.status, 0) << c.out;
  const SkipPlanFile p = read_skip_plan(plan);
  EXPECT_GE(p.skip.count(), 1) << c.out;
  EXPECT_LT(p.skip.count(), 10) << c.out;
  const json& k = p.calibration;
  EXPECT_TRUE(k["within_budget"].get<bool>());
  const double kld = k["measured"]["kld_mean"].get<double>();
  EXPECT_GT(kld, 0.0);
  EXPECT_LE(kld, 0.3);
  EXPECT_EQ(k["tokens"], 1023);
  ASSERT_EQ(k["sensitivity"].size(), 5u);
  for (const json& row : k["sensitivity"]) {
    EXPECT_GT(row["attn_change"].get<double>(), 0.0) << row.dump();
    EXPECT_GT(row["mlp"]["kld_mean"].get<double>(), 0.0) << row.dump();
  }
  EXPECT_LT(k["weight_bytes_read"].get<double>(), k["weight_bytes_full"].get<double>());
  EXPECT_NE(c.out.find("| layer | attn change | mlp change | attn KLD | mlp KLD | plan |"), std::string::npos);
  std::string out = c.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  EXPECT_EQ(json::parse(out.substr(out.rfind('\n') + 1))["skip"], p.skip.describe());

  // calibrate-skip measures on an f32 cache: pinned here so that ppl reproduces it (the default is f16).
  const std::string ppl = "ppl -m " + model_ + " -f " + calib + " --max-tokens 1023 -t 2 --kv-dtype f32 ";
  auto f = tinfer(ppl + "--ctx 256 --save-logits " + base);
  ASSERT_EQ(f.status, 0) << f.out;
  auto q = tinfer(ppl + "--kld-base " + base + " --json --skip-plan " + plan);
  ASSERT_EQ(q.status, 0) << q.out;
  const json j = json::parse(q.out.substr(q.out.rfind("\n{") + 1));
  EXPECT_EQ(j["tokens"], 1023);
  EXPECT_NEAR(j["kld_mean"].get<double>(), kld, 1e-5) << q.out;
  fs::remove(calib), fs::remove(plan), fs::remove(base);
}

// run, bench and bench throughput apply the plan (serve takes it through the same engine options, whose refusals
// are tested below); the engine's KV shrinks by exactly the two layers without attention.
TEST_F(CalibrateSkip, RunBenchAndThroughputApplyAPlan) {
  const std::string plan = hand_plan();
  auto r = tinfer("run -m " + model_ + " -p 'Once upon a time' -n 8 -t 2 --temp 0 --skip-plan " + plan);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("(2 layers without KV)"), std::string::npos) << r.out;
  auto b = tinfer("bench -m " + model_ + " --prompt 16 --gen 4 --repeat 1 -t 2 --json --skip-plan " + plan);
  ASSERT_EQ(b.status, 0) << b.out;
  EXPECT_NE(b.out.find("attn 2,3; mlp 1,3"), std::string::npos) << b.out;
  const std::string tp = "bench throughput -m " + model_ + " -t 2 --kv-memory 4M --requests 4 --input-len 16 --output-len 8 ";
  auto full = tinfer(tp), skipped = tinfer(tp + "--skip-plan " + plan);
  ASSERT_EQ(full.status, 0) << full.out;
  ASSERT_EQ(skipped.status, 0) << skipped.out;
  ASSERT_GT(engine_kv_bytes(full.out), 0) << full.out;
  EXPECT_EQ(engine_kv_bytes(skipped.out) * 5, engine_kv_bytes(full.out) * 3) << skipped.out;
  fs::remove(plan);
}

TEST_F(CalibrateSkip, EverySubcommandRefusesAnotherModelsOrABadPlan) {
  const std::string other = tmp("other.gguf");
  SynthSpec s;
  s.dim = 64, s.n_layers = 5, s.n_heads = 8, s.n_kv_heads = 4, s.ffn_dim = 172, s.n_vocab = 512, s.ctx_len = 512;
  synthesize_model(s, other, 1);
  const std::string plan = hand_plan();
  const std::string want = "skip plan '" + plan + "' was made for another model";
  expect_error("ppl -m " + other + " -f " + plan + " --skip-plan " + plan, want);
  expect_error("run -m " + other + " -p hi -n 2 --skip-plan " + plan, want);
  expect_error("bench -m " + other + " --prompt 8 --gen 2 --repeat 1 --skip-plan " + plan, want);
  expect_error("bench throughput -m " + other + " --kv-memory 4M --requests 2 --skip-plan " + plan, want);
  expect_error("serve -m " + other + " --port 0 --skip-plan " + plan, want);
  fs::remove(other), fs::remove(plan);
  expect_error("run -m " + model_ + " -p hi --skip-plan /nonexistent.json", "cannot read skip plan '/nonexistent.json'");
  const std::string bad = tmp("bad.json");
  std::ofstream(bad) << "{\"format\":\"tinfer-skip-plan\",\"version\":1,";
  expect_error("run -m " + model_ + " -p hi --skip-plan " + bad, "not valid JSON");
  fs::remove(bad);
  const std::string c = "calibrate-skip -m " + model_ + " -o " + tmp("never.json");
  expect_error(c, "give exactly one of --budget-kld X");
  expect_error(c + " --budget-kld -1", "--budget-kld must be a number >= 0");
  expect_error(c + " --budget-kld 0.1 --blocks ffn", "--blocks must be attn,mlp, mlp or attn");
  expect_error(c + " --budget-kld 0.1 --calib /nonexistent.txt", "cannot read calibration file '/nonexistent.txt'");
  EXPECT_FALSE(fs::exists(tmp("never.json")));
}

}  // namespace
}  // namespace tinfer::cli

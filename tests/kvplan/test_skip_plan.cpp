// Layer-skip plans without running a model: the plan file (round trip, every refusal with the problem named,
// the model check), the greedy search on made-up costs (exact plans), and the KV accounting of a skip plan --
// KvPrecision, the planner and KvStorage count only the layers whose attention is kept, to the byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <unistd.h>

#include "tinfer/error.h"
#include "kvcache/memory_planner.h"
#include "backend/cpu/kv_storage.h"
#include "plans/skip_plan_file.h"
#include "plans/skip_search.h"
#include "plans/plan_json.h"
#include <tinfer/engine.h>

namespace tinfer::cli {
namespace {

using nlohmann::json;

SkipPlanFile sample_plan() {
  SkipPlanFile p;
  p.model = ModelIdentity{"m.gguf", "tiny", 4, 2, 8, "fnv1a64:0123456789abcdef"};
  p.skip = LayerSkip::none(4);
  p.skip.mlp[1] = 1, p.skip.attn[2] = 1, p.skip.attn[3] = p.skip.mlp[3] = 1;
  p.calibration = {{"metric", "kld_mean"}, {"budget", 0.05}};
  return p;
}

void expect_refused(const json& j, const std::string& needle) {
  try {
    parse_skip_plan(j.dump(), "PLAN");
    ADD_FAILURE() << "accepted: " << j.dump();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("PLAN: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "expected '" << needle << "' in: " << msg;
  }
}

TEST(SkipPlanFile, RoundTripsInMemoryAndThroughAFile) {
  const SkipPlanFile p = sample_plan();
  const json j = skip_plan_json(p);
  EXPECT_EQ(j["layers"], json({"none", "mlp", "attn", "both"}));
  EXPECT_EQ(j["format"], "tinfer-skip-plan");
  const SkipPlanFile q = parse_skip_plan(j.dump(), "x");
  EXPECT_EQ(q.skip, p.skip);
  EXPECT_EQ(q.model.fingerprint, p.model.fingerprint);
  EXPECT_EQ(q.calibration, p.calibration);
  EXPECT_EQ(q.skip.describe(), "attn 2,3; mlp 1,3");
  const std::string path = (std::filesystem::path(::testing::TempDir()) /
                            ("tinfer_skip_" + std::to_string(::getpid()) + ".json")).string();
  write_skip_plan(p, path);
  EXPECT_EQ(read_skip_plan(path).skip, p.skip);
  EXPECT_EQ(load_skip_plan(path, p.model), p.skip);
  ModelIdentity other = p.model;
  other.fingerprint = "fnv1a64:fedcba9876543210";
  try {
    load_skip_plan(path, other);
    ADD_FAILURE() << "a plan for another model was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("skip plan '" + path + "' was made for another model"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(read_skip_plan(path), Error);  // cannot read
}

TEST(SkipPlanFile, RefusesEveryMalformedPlanNamingTheProblem) {
  const json good = skip_plan_json(sample_plan());
  try {
    parse_skip_plan("{\"format\":", "PLAN");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
  expect_refused(json::array(), "a skip plan is a JSON object");
  json j = good;
  j["format"] = "tinfer-kv-plan";
  expect_refused(j, "not a skip plan: \"format\" must be \"tinfer-skip-plan\"");
  j = good, j["version"] = 2;
  expect_refused(j, "unsupported plan version 2");
  j = good, j.erase("model");
  expect_refused(j, "missing \"model\"");
  j = good, j["model"]["n_layers"] = 0;
  expect_refused(j, "\"n_layers\" in \"model\" must be positive");
  j = good, j["layers"] = json({"none", "mlp", "attn"});
  expect_refused(j, "\"layers\" lists 3 layers but \"model\" has 4");
  j = good, j["layers"][1] = "ffn";
  expect_refused(j, "layers[1] must be \"none\", \"attn\", \"mlp\" or \"both\", got \"ffn\"");
  j = good, j["layers"][0] = 1;
  expect_refused(j, "layers[0] must be");
  j = good, j["layers"] = json({"attn", "both", "attn", "both"});
  expect_refused(j, "skips every layer's attention");
  j = good, j["calibration"] = 3;
  expect_refused(j, "\"calibration\" must be an object");
}

// Costs add up except where a table says otherwise; the search must take exactly the cheapest per byte first.
TEST(SkipSearch, TakesCheapestPerSavedByteWhileTheWholePlanFits) {
  // 3 layers. Attention blocks save 1 byte, MLPs 3.
  std::vector<SkipCandidate> c = {
      {0, false, 0.50, 1}, {0, true, 0.90, 3},   // layer 0: expensive
      {1, false, 0.02, 1}, {1, true, 0.03, 3},   // per byte: 0.02, 0.01
      {2, false, 0.04, 1}, {2, true, 0.30, 3},   // 0.04, 0.1
  };
  std::vector<std::string> seen;
  auto additive = [&](const LayerSkip& s) {
    seen.push_back(s.describe());
    double cost = 0;
    for (const SkipCandidate& k : c) cost += ((k.mlp ? s.mlp : s.attn)[size_t(k.layer)] ? k.cost : 0);
    return cost;
  };
  SkipSearchResult r = greedy_skip_search(3, c, 0.1, additive);
  // Order by cost/byte: mlp1 (0.01), attn1 (0.02), attn2 (0.04), mlp2 (0.1: over alone? no, 0.30 > 0.1: left out),
  // attn0 (0.5 > 0.1: left out), mlp0 (left out).
  EXPECT_EQ(seen, (std::vector<std::string>{"mlp 1", "attn 1; mlp 1", "attn 1,2; mlp 1"}));
  EXPECT_EQ(r.skip.describe(), "attn 1,2; mlp 1");
  EXPECT_NEAR(r.cost, 0.09, 1e-12);
  EXPECT_EQ(r.evaluations, 3);
  // Non-additive: with attention 1 skipped, attention 2 costs far more; the plan must drop it when measured.
  seen.clear();
  r = greedy_skip_search(3, c, 0.1, [&](const LayerSkip& s) {
    double v = additive(s);
    if (s.skips_attn(1) && s.skips_attn(2)) v += 1;
    return v;
  });
  EXPECT_EQ(r.skip.describe(), "attn 1; mlp 1");
  EXPECT_NEAR(r.cost, 0.05, 1e-12);
  // max_evals bounds the measured plans; a zero budget takes nothing with a cost.
  EXPECT_EQ(greedy_skip_search(3, c, 0.1, additive, 1).skip.describe(), "mlp 1");
  EXPECT_TRUE(greedy_skip_search(3, c, 0.0, additive).skip.empty());
}

TEST(SkipSearch, NeverSkipsTheLastAttention) {
  std::vector<SkipCandidate> c = {{0, false, 0.0, 1}, {1, false, 0.0, 1}};
  const SkipSearchResult r = greedy_skip_search(2, c, 1.0, [](const LayerSkip&) { return 0.0; });
  EXPECT_EQ(r.skip.count(), 1);
  EXPECT_EQ(r.evaluations, 1);
}

// A layer whose attention is skipped holds no KV: the precision, the planner and the storage all drop exactly
// its bytes (MLP-only skips change nothing).
TEST(SkipPlanKv, KvMemoryShrinksByExactlyTheSkippedLayers) {
  ModelConfig cfg;
  cfg.dim = 64, cfg.n_layers = 4, cfg.n_heads = 8, cfg.n_kv_heads = 2, cfg.head_dim = 8, cfg.ffn_dim = 128;
  cfg.n_vocab = 32, cfg.ctx_len = 64;
  for (KvDtype t : {KvDtype::f32, KvDtype::f16, KvDtype::int8, KvDtype::int4}) {
    KvPrecision full = KvPrecision::uniform(4, t), skipped = full;
    skipped.no_kv = {0, 1, 0, 1};
    const int64_t per_layer = full.layer_bytes_per_token(0, 2, 8);
    EXPECT_EQ(skipped.bytes_per_token(2, 8), full.bytes_per_token(2, 8) - 2 * per_layer);
    EXPECT_EQ(skipped.layers_with_kv(), 2);
    EXPECT_NE(skipped.describe().find("(2 layers without KV)"), std::string::npos) << skipped.describe();
    kv::KvShape shape{4, 2, 8, 2, {}};
    for (int64_t l = 0; l < 4; ++l) shape.layer_bytes_per_token.push_back(skipped.layer_bytes_per_token(l, 2, 8));
    EXPECT_EQ(kv::kv_bytes_per_token(shape), size_t(2 * per_layer));
    const KvStorage a(cfg, 8, 16, full), b(cfg, 8, 16, skipped);
    EXPECT_EQ(a.bytes() - b.bytes(), size_t(2 * 8 * 16 * per_layer));
    EXPECT_THROW(b.layer_view(1), Error);
    EXPECT_NO_THROW(b.layer_view(2));
  }
  kv::KvShape none{2, 2, 8, 2, {0, 0}};
  EXPECT_THROW(kv::kv_bytes_per_token(none), Error);  // no layer holds KV
  EngineConfig ec;
  ec.plans.skip = LayerSkip::none(4);
  ec.plans.skip.attn[3] = 1, ec.plans.skip.mlp[0] = 1;
  EXPECT_EQ(ec.kv_precision(4).layers_with_kv(), 3);
  EXPECT_THROW(ec.kv_precision(5), Error);  // a plan for 4 layers
}

}  // namespace
}  // namespace tinfer::cli

// The KV plan file: JSON round trip (in memory and through a file), every refusal with the problem named, the
// model check, and the fingerprint (stable for one model, different for same-shaped models with other weights
// or metadata, and for the same model converted from another format).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/test_env.h"
#include "tinfer/error.h"
#include "plans/kv_plan_file.h"
#include "formats/gguf.h"
#include "model/model_identity.h"
#include "model/synth/synth.h"

namespace tinfer::cli {
namespace {

using nlohmann::json;

KvPlanFile sample_plan() {
  KvPlanFile p;
  p.model = ModelIdentity{"m.gguf", "tiny", 3, 2, 8, "fnv1a64:0123456789abcdef"};
  p.precision.layers = {{KvDtype::int8, KvDtype::int4}, {KvDtype::f16, KvDtype::f32}, {KvDtype::int4, KvDtype::int8}};
  p.precision.k_smooth = {std::vector<float>(16, 0.5f), {}, std::vector<float>(16, 2.25f)};  // 2 kv heads x 8
  p.calibration = {{"metric", "kld_mean"}, {"budget", 0.01}};
  return p;
}

// parse_kv_plan of `j` must fail with a message containing `needle` (and the origin).
void expect_refused(const json& j, const std::string& needle) {
  try {
    parse_kv_plan(j.dump(), "PLAN");
    ADD_FAILURE() << "accepted: " << j.dump();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("PLAN: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "expected '" << needle << "' in: " << msg;
  }
}

TEST(KvPlanFile, RoundTrip) {
  const KvPlanFile p = sample_plan();
  const json j = kv_plan_json(p);
  EXPECT_EQ(j["format"], "tinfer-kv-plan");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["layers"][0], (json{{"k", "int8"}, {"v", "int4"}}));
  const KvPlanFile q = parse_kv_plan(j.dump(), "x");
  EXPECT_EQ(q.precision, p.precision);
  EXPECT_EQ(q.model.fingerprint, p.model.fingerprint);
  EXPECT_EQ(q.model.file, "m.gguf");
  EXPECT_EQ(q.model.name, "tiny");
  EXPECT_EQ(q.model.n_layers, 3);
  EXPECT_EQ(q.model.n_kv_heads, 2);
  EXPECT_EQ(q.model.head_dim, 8);
  EXPECT_EQ(q.calibration, p.calibration);

  const std::string path = (std::filesystem::path(::testing::TempDir()) / "tinfer_kv_plan_rt.json").string();
  write_kv_plan(p, path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  const KvPlanFile r = read_kv_plan(path);
  EXPECT_EQ(r.precision, p.precision);
  EXPECT_EQ(kv_plan_json(r), j);
  std::filesystem::remove(path);
}

TEST(KvPlanFile, RefusesEveryMalformedPlan) {
  try {
    parse_kv_plan("{\"format\": \"tinfer-kv-plan\",", "PLAN");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("PLAN: not valid JSON"), std::string::npos) << e.what();
  }
  const json good = kv_plan_json(sample_plan());
  expect_refused(json::array(), "a KV plan is a JSON object");
  json j = good;
  j["format"] = "tinfer-skip-plan";
  expect_refused(j, "not a KV plan: \"format\" must be \"tinfer-kv-plan\", got \"tinfer-skip-plan\"");
  j = good, j.erase("format");
  expect_refused(j, "not a KV plan");
  j = good, j["version"] = 2;
  expect_refused(j, "unsupported plan version 2 (this build reads version 1)");
  j = good, j["version"] = "1";
  expect_refused(j, "\"version\" in the plan must be an integer");
  j = good, j["layers"][1]["v"] = "int3";
  expect_refused(j, "layers[1]: unknown v type 'int3' (f32|f16|int8|int4)");
  j = good, j["layers"][2].erase("k");
  expect_refused(j, "missing \"k\" in layers[2]");
  j = good, j["layers"][0] = "int8";
  expect_refused(j, "layers[0] must be an object");
  j = good, j["layers"].erase(2);
  expect_refused(j, "\"layers\" lists 2 layers but \"model\" has 3");
  j = good, j["model"]["n_layers"] = 0;
  expect_refused(j, "\"n_layers\" in \"model\" must be positive");
  j = good, j["model"].erase("fingerprint");
  expect_refused(j, "missing \"fingerprint\" in \"model\"");
  j = good, j["model"]["fingerprint"] = "";
  expect_refused(j, "\"fingerprint\" in \"model\" is empty");
  j = good, j["model"]["head_dim"] = 8.5;
  expect_refused(j, "\"head_dim\" in \"model\" must be an integer");
  j = good, j.erase("model");
  expect_refused(j, "missing \"model\" in the plan");
  j = good, j["calibration"] = 3;
  expect_refused(j, "\"calibration\" must be an object");
  j = good, j["k_smooth"].erase(1);
  expect_refused(j, "\"k_smooth\" lists 2 layers but \"model\" has 3");
  j = good, j["k_smooth"][0].erase(0);
  expect_refused(j, "k_smooth[0] must be empty or n_kv_heads x head_dim = 16 numbers");
  j = good, j["k_smooth"][2][3] = 0;
  expect_refused(j, "k_smooth[2]: factors must be positive numbers, got 0");
  j = good, j["k_smooth"][2][3] = "1";
  expect_refused(j, "k_smooth[2]: factors must be positive numbers");
  EXPECT_THROW(read_kv_plan("/nonexistent/plan.json"), Error);
}

TEST(KvPlanFile, RefusesAnotherModel) {
  const KvPlanFile p = sample_plan();
  EXPECT_NO_THROW(check_kv_plan_model(p, p.model, "P"));
  ModelIdentity other = p.model;
  other.fingerprint = "fnv1a64:fedcba9876543210";
  other.file = "other.gguf";
  try {
    check_kv_plan_model(p, other, "KV plan 'p.json'");
    ADD_FAILURE();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("KV plan 'p.json' was made for another model"), std::string::npos) << msg;
    EXPECT_NE(msg.find("m.gguf"), std::string::npos) << msg;
    EXPECT_NE(msg.find("other.gguf"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fnv1a64:fedcba9876543210"), std::string::npos) << msg;
  }
  other = p.model, other.n_layers = 4;  // same fingerprint, other shape: still refused
  EXPECT_THROW(check_kv_plan_model(p, other, "P"), Error);
}

TEST(ModelFingerprint, StableAndSpecific) {
  SynthSpec s;
  s.n_layers = 2;
  const std::vector<uint8_t> a = synthesize_model_bytes(s);
  const std::string fa = gguf_fingerprint(GgufFile::from_bytes(a.data(), a.size()));
  EXPECT_EQ(fa.rfind("fnv1a64:", 0), 0u);
  EXPECT_EQ(fa.size(), 8u + 16u);
  EXPECT_EQ(gguf_fingerprint(GgufFile::from_bytes(a.data(), a.size())), fa);  // deterministic
  SynthSpec other_weights = s;
  other_weights.seed = 2;  // same shapes and metadata, other weights
  const std::vector<uint8_t> b = synthesize_model_bytes(other_weights);
  EXPECT_NE(gguf_fingerprint(GgufFile::from_bytes(b.data(), b.size())), fa);
  SynthSpec other_name = s;
  other_name.name = "synth2";  // metadata only
  const std::vector<uint8_t> c = synthesize_model_bytes(other_name);
  EXPECT_NE(gguf_fingerprint(GgufFile::from_bytes(c.data(), c.size())), fa);
  // One byte at the end of the last tensor's data (inside the sampled tail), found by its last 16 bytes.
  const GgufFile fa_file = GgufFile::from_bytes(a.data(), a.size());
  const GgufTensor& last = fa_file.tensors().back();
  ASSERT_GE(last.bytes, 16u);
  const auto at = std::search(a.begin(), a.end(), last.data + last.bytes - 16, last.data + last.bytes);
  ASSERT_NE(at, a.end());
  std::vector<uint8_t> d = a;
  d[size_t(at - a.begin()) + 15] ^= 1;
  EXPECT_NE(gguf_fingerprint(GgufFile::from_bytes(d.data(), d.size())), fa);
}

TEST(ModelFingerprint, IdentityFromAFileEqualsTheLoadedModel) {
  const std::string path = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(path, "models/stories260K.gguf");
  const ModelIdentity fast = read_model_identity(path);
  const ModelIdentity loaded = model_identity(*Model::load(path));
  EXPECT_EQ(fast.fingerprint, loaded.fingerprint);
  EXPECT_EQ(fast.file, "stories260K.gguf");
  EXPECT_EQ(fast.n_layers, loaded.n_layers);
  EXPECT_EQ(fast.n_kv_heads, loaded.n_kv_heads);
  EXPECT_EQ(fast.head_dim, loaded.head_dim);
  EXPECT_THROW(read_model_identity("/nonexistent/model.gguf"), Error);
}

}  // namespace
}  // namespace tinfer::cli

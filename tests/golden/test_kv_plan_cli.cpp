// tinfer kv-plan end to end: --like, --config and -m give the playbook's figures as JSON and as a table, agree
// with the engine's own start-up line (bench throughput) for the same model, budget and types, and refuse bad
// input with a clear message.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/test_env.h"
#include "golden/golden_util.h"

namespace tinfer {
namespace {

using nlohmann::json;

json kv_plan(const std::string& args) {
  auto r = test::run_command(test::tinfer_bin() + " kv-plan " + args + " --json 2>&1");
  EXPECT_EQ(r.status, 0) << args << "\n" << r.out;
  try {
    return json::parse(r.out);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r.out;
    return json::object();
  }
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p =
      std::filesystem::path(::testing::TempDir()) / ("tinfer_kvplan_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}

void expect_error(const std::string& args, const std::string& needle) {
  auto r = test::run_command(test::tinfer_bin() + " kv-plan " + args + " 2>&1");
  EXPECT_EQ(r.status, 1) << args << "\n" << r.out;
  EXPECT_NE(r.out.find("tinfer kv-plan: error: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.out;
}

// Llama-2-7B: 2 x 32 layers x 32 kv heads x 128 x 2 bytes = 524,288 bytes/token at f16; 8 GiB hold 8 sequences of
// 2,048 tokens. The same from its config.json.
TEST(KvPlanCli, LikeAndConfigJson) {
  const json like = kv_plan("--like llama-2-7b --memory 8G --ctx 2048 --kv-dtype f16");
  EXPECT_EQ(like["bytes_per_token"], 524288);
  EXPECT_EQ(like["bytes_per_block"], 524288 * 16);
  EXPECT_EQ(like["num_blocks"], 1024);
  EXPECT_EQ(like["capacity_tokens"], 16384);
  EXPECT_EQ(like["max_concurrency"], 8);
  EXPECT_EQ(like["layers"].size(), 32u);
  EXPECT_EQ(like["layers"][31]["k_bytes_per_token"], 8192);
  EXPECT_EQ(like["model"]["weight_bytes"], int64_t(2) * 6738415616);
  ASSERT_EQ(like["by_dtype"].size(), 4u);
  EXPECT_EQ(like["by_dtype"][1]["type"], "f16");
  EXPECT_EQ(like["by_dtype"][1]["x_f16"], 1.0);
  EXPECT_EQ(like["by_dtype"][0]["max_concurrency"], 4);

  const std::string cfg = write_temp("llama2.json", R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
    "intermediate_size": 11008, "max_position_embeddings": 4096, "model_type": "llama", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "tie_word_embeddings": false, "torch_dtype": "float16",
    "vocab_size": 32000})");
  const json hf = kv_plan("--config " + cfg + " --memory 8G --ctx 2048 --kv-dtype f16");
  std::filesystem::remove(cfg);
  for (const char* k : {"bytes_per_token", "num_blocks", "capacity_tokens", "max_concurrency", "by_dtype"})
    EXPECT_EQ(hf[k], like[k]) << k;
  EXPECT_EQ(hf["model"]["params"], like["model"]["params"]);
  EXPECT_EQ(hf["model"]["weight_type"], "f16");

  // GQA: Llama-3-8B keeps 8 of 32 heads' K/V; int8 adds one fp16 scale per (token, kv head), int4 a scale and a min.
  EXPECT_EQ(kv_plan("--like llama-3-8b --memory 8G --ctx 2048 --kv-dtype f16")["bytes_per_token"], 131072);
  EXPECT_EQ(kv_plan("--like llama-3-8b --memory 8G --ctx 2048 --kv-dtype int8")["bytes_per_token"], 2 * 32 * 8 * 130);
  EXPECT_EQ(kv_plan("--like llama-3-8b --memory 8G --ctx 2048 --kv-dtype int4")["bytes_per_token"], 2 * 32 * 8 * 68);
}

TEST(KvPlanCli, KvSplitPerLayerRowsAndTable) {
  const json j = kv_plan("--like tinyllama-1.1b --memory 1G --ctx 2048 --kv-dtype-k int8 --kv-dtype-v int4");
  EXPECT_EQ(j["kv_types"], "k=int8 v=int4 +k-smooth");  // as the engine's start-up line: smoothed at load
  EXPECT_EQ(j["layers"][0]["k_type"], "int8");
  EXPECT_EQ(j["layers"][0]["v_type"], "int4");
  EXPECT_EQ(j["layers"][0]["k_bytes_per_token"], 4 * (64 + 2));  // 4 kv heads x (head_dim 64 codes + fp16 scale)
  EXPECT_EQ(j["layers"][0]["v_bytes_per_token"], 4 * (32 + 4));  // 32 bytes of nibbles + fp16 scale and min
  EXPECT_EQ(j["bytes_per_token"], 22 * 4 * (66 + 36));
  auto t = test::run_command(test::tinfer_bin() +
                             " kv-plan --like tinyllama-1.1b --memory 1G --ctx 2048 --weight-type q4_0 2>&1");
  ASSERT_EQ(t.status, 0) << t.out;
  for (const char* want :
       {"built-in shape tinyllama-1.1b", "0-21", "per token    22528 bytes" /* the f16 default */, "sequences    ", "q4_0", "int4", "x f16"})
    EXPECT_NE(t.out.find(want), std::string::npos) << want << "\n" << t.out;
}

// The tool's figures are the engine's: the start-up line of bench throughput on the same file, budget and types.
TEST(KvPlanCli, AgreesWithEngineStartLine) {
  const std::string model = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  for (const char* types :
       {"--kv-dtype f16", "--kv-dtype int8", "--kv-dtype int4", "--kv-dtype-k f32 --kv-dtype-v int4"}) {
    SCOPED_TRACE(types);
    const std::string common = std::string(" --memory 3M --ctx 200 --block-size 16 ") + types;
    const json j = kv_plan("-m " + model + common);
    auto e =
        test::run_command(test::tinfer_bin() + " bench throughput -m " + model + " -t 1 --kv-memory 3M --ctx 200 " +
                          types + " --requests 1 --input-len 8 --output-len 2 2>&1");
    ASSERT_EQ(e.status, 0) << e.out;
    char want[256];
    std::snprintf(want, sizeof want, "KV cache: %lld bytes/token (%s), %d blocks x 16 tokens = %lld tokens",
                  j["bytes_per_token"].get<long long>(), j["kv_types"].get<std::string>().c_str(),
                  j["num_blocks"].get<int>(), j["capacity_tokens"].get<long long>());
    EXPECT_NE(e.out.find(want), std::string::npos) << want << "\n" << e.out;
    EXPECT_NE(
        e.out.find("max concurrency " + std::to_string(j["max_concurrency"].get<int>()) + " at max_model_len 200"),
        std::string::npos)
        << e.out;
  }
}

TEST(KvPlanCli, RefusesBadInput) {
  const std::string bad = write_temp("bad.json", "{\"num_hidden_layers\": 32, \"hidden_size\": ");
  expect_error("--config " + bad + " --memory 8G", "malformed JSON");
  const std::string partial = write_temp("partial.json", "{\"num_hidden_layers\": 32}");
  expect_error("--config " + partial + " --memory 8G", "missing key 'num_attention_heads'");
  expect_error("-m " + partial + " --memory 8G", "is not a GGUF file");
  std::filesystem::remove(bad);
  std::filesystem::remove(partial);
  expect_error("--like llama-9b --memory 8G", "unknown --like model 'llama-9b' (known: tinyllama-1.1b");
  expect_error("--like llama-2-7b --memory 8G --kv-dtype int3", "--kv-dtype must be f32|f16|int8|int4, got 'int3'");
  expect_error("--like llama-2-7b --memory 8G --kv-dtype-v fp8", "--kv-dtype-v must be f32|f16|int8|int4, got 'fp8'");
  expect_error(
      "--like llama-2-7b --memory 512M --ctx 2048 --kv-dtype f16",
      "max_model_len 2048 does not fit the KV cache: kv planner: one sequence of 2048 tokens needs 128 blocks");
  expect_error("--like llama-2-7b --memory 8G --ctx 8192", "beyond the model's context length 4096");
  expect_error("--like llama-2-7b --memory lots", "--memory: 'lots' is not a byte count");
  expect_error("--like llama-2-7b --memory 8G --block-size 0", "--block-size must be in [1, 256], got 0");
  expect_error("--like llama-2-7b --memory 8G --ctx 4294969344", "--ctx must be in [1, 16777216]");
  expect_error("--memory 8G", "give exactly one of -m MODEL.gguf, --like NAME, --config config.json");
  expect_error("--like llama-2-7b --config x.json --memory 8G", "give exactly one of");
  const std::string model = test::shared_file("models/stories260K.gguf");
  if (!model.empty())
    expect_error("-m " + model + " --weight-type q4_0", "--weight-type applies to --like and --config");
}

}  // namespace
}  // namespace tinfer

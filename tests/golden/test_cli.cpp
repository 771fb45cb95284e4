// The tinfer binary on bad input: each a clear error message and a non-zero exit, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/test_env.h"
#include "golden/golden_util.h"

namespace tinfer {
namespace {

// Files live in gtest's temp dir under a per-process name and are removed at exit.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (auto& p : paths) std::filesystem::remove(p);
  }
} g_temp_files;

std::string temp_file(const std::string& name, const std::string& bytes) {
  auto p = std::filesystem::path(::testing::TempDir()) / ("tinfer_cli_" + std::to_string(::getpid()) + "_" + name);
  g_temp_files.paths.push_back(p.string());
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

void expect_error(const std::string& args, const std::string& needle) {
  auto r = test::run_command(test::tinfer_bin() + " " + args + " 2>&1");
  EXPECT_EQ(r.status, 1) << args << "\n" << r.out;
  EXPECT_NE(r.out.find("error"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.out;
}

// Every subcommand answers --help (and -h) with its usage on stdout and exit status 0, doing nothing else.
TEST(Cli, EverySubcommandAnswersHelp) {
  for (std::string cmd : {"run", "chat", "info", "ppl", "synth", "bench", "bench throughput", "bench ladder",
                          "bench serve", "serve", "tokenize", "quantize", "kv-plan", "calibrate-skip", "calibrate-exit"}) {
    for (const char* flag : {"--help", "-h"}) {
      auto r = test::run_command(test::tinfer_bin() + " " + cmd + " " + flag + " 2>/dev/null");
      EXPECT_EQ(r.status, 0) << cmd << " " << flag << "\n" << r.out;
      EXPECT_EQ(r.out.rfind("usage: tinfer " + cmd, 0), 0u) << cmd << " " << flag << "\n" << r.out;
    }
  }
  auto top = test::run_command(test::tinfer_bin() + " --help 2>/dev/null");
  EXPECT_EQ(top.status, 0);
  EXPECT_NE(top.out.find("serve"), std::string::npos) << top.out;
}

// --profile prints a table per phase whose categories cover the step, and --trace writes trace-event JSON.
TEST(Cli, BenchProfileAndTrace) {
  std::string model = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  const std::string trace = temp_file("trace.json", "");
  auto r = test::run_command(test::tinfer_bin() + " bench -m " + model +
                             " --prompt 32 --gen 8 --repeat 1 -t 2 --profile --trace " + trace + " 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* want : {"profile      prefill", "profile      decode", "attention", "matmul_gate_up", "lm_head"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  std::ifstream f(trace);
  std::string json((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(json.rfind("{\"traceEvents\":[{\"name\":\"embed\"", 0), 0u) << json.substr(0, 200);
  EXPECT_NE(json.find("\"ph\":\"X\""), std::string::npos);
  auto t = test::run_command(test::tinfer_bin() + " bench throughput -m " + model +
                             " -t 2 --kv-memory 16M --requests 4 --input-len 16 --output-len 8 --profile 2>&1");
  ASSERT_EQ(t.status, 0) << t.out;
  for (const char* want : {"profile      engine step", "sample", "schedule", "attention"})
    EXPECT_NE(t.out.find(want), std::string::npos) << want << "\n" << t.out;
}

// bench ladder --tiny runs every rung, and each rung's switches are really applied: the engine's own
// configuration per rung, and the effects only those switches have (padding rows in rung 0, prefix hits once
// caching is on, twice the KV tokens with fp16, more again with int8 and the calibrated plan); quality is exact
// until the KV element type changes. The KV rungs (5, 6) use int8 and a plan from calibrate-kv; the weight rungs
// (7..10) run quantized copies under an f16 cache: smaller weights, quality measurably away from the base.
TEST(Cli, BenchLadderTinyAppliesEveryRung) {
  std::string model = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  const std::string shared = model.substr(0, model.size() - std::string("models/stories260K.gguf").size());
  const std::string plan = temp_file("ladder-plan.json", "");
  auto c = test::run_command(test::tinfer_bin() + " calibrate-kv -m " + model + " --calib-tokens 512 --ctx 256 " +
                             "--budget-kld 0.01 -t 2 -o " + plan + " 2>&1");
  ASSERT_EQ(c.status, 0) << c.out;
  std::string skip_plans;
  for (const char* budget : {"0.3", "0.8"}) {  // stories260K on wikitext: attention 2, then 2 and 4
    const std::string p = temp_file(std::string("ladder-skip-") + budget + ".json", "");
    auto sc = test::run_command(test::tinfer_bin() + " calibrate-skip -m " + model + " --calib-tokens 512 --ctx 256 " +
                                "--budget-kld " + budget + " -t 2 -o " + p + " 2>&1");
    ASSERT_EQ(sc.status, 0) << sc.out;
    skip_plans += (skip_plans.empty() ? "" : ",") + p;
  }
  auto r = test::run_command("TINFER_SHARED=" + shared + " " + test::tinfer_bin() + " bench ladder -m " + model +
                             " --tiny --kv-memory 8M --ctx 256 --max-seqs 8 -t 2 --kv-plan " + plan +
                             " --ladder-skip-plans " + skip_plans + " --ladder-exit 0.9,0 --ladder-exit-layers 3 --json 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.rfind("\n{") + 1));
  const auto& rungs = j.at("rungs");
  ASSERT_EQ(rungs.size(), 16u);
  const std::string plan_types = rungs[6].at("applied").at("kv_dtype");
  EXPECT_NE(plan_types.find("int4"), std::string::npos) << plan_types;  // budget 0.01: int4 somewhere
  EXPECT_NE(plan_types.find("+k-smooth"), std::string::npos) << plan_types;
  for (size_t k = 0; k < rungs.size(); ++k) {
    const auto& a = rungs[k].at("applied");
    EXPECT_EQ(a.at("batching"), k < 2 ? "static-padded" : "continuous") << k;
    EXPECT_EQ(a.at("kv_layout"), k < 1 ? "reserved" : "paged") << k;
    EXPECT_EQ(a.at("chunked_prefill").get<bool>(), k >= 3) << k;
    EXPECT_EQ(a.at("prefix_caching").get<bool>(), k >= 3) << k;
    const char* kv = k < 4 ? "f32" : k == 5 ? "int8" : "f16";
    if (k == 12 || k == 13) {  // the skip plans' layers without attention hold no KV
      EXPECT_EQ(a.at("kv_dtype"), k == 12 ? "f16 (1 layers without KV)" : "f16 (2 layers without KV)") << k;
    } else if (k != 6) {
      EXPECT_EQ(a.at("kv_dtype"), kv) << k;
    }
    const char* weights[] = {"q8_0:smoothquant", "q4_0:rtn", "q4_0:gptq", "q4_0:awq"};
    // The speculative rung keeps rung 10's weights; the model-side rungs (12..15) go back to the file as stored.
    EXPECT_EQ(a.at("weights"), k < 7 || k >= 12 ? "as stored" : weights[std::min<size_t>(k - 7, 3)]) << k;
    EXPECT_EQ(a.at("spec"), k >= 11 ? "ngram" : "none") << k;
    EXPECT_EQ(a.at("skip") != "none", k == 12 || k == 13) << k;
    EXPECT_EQ(a.at("early_exit"), k == 14 ? "p>0.9 after 3" : k == 15 ? "p>0 after 3" : "off") << k;
    EXPECT_GT(rungs[k].at("total_tok_s").get<double>(), 0) << k;
    if (k < 4) {
      EXPECT_EQ(rungs[k].at("kld_max").get<double>(), 0.0) << k;  // bit-identical numerics
    }
  }
  EXPECT_GT(rungs[0].at("padding_tokens").get<int64_t>(), 0);
  EXPECT_EQ(rungs[2].at("padding_tokens").get<int64_t>(), 0);
  EXPECT_EQ(rungs[2].at("prefix_hit_rate").get<double>(), 0.0);
  EXPECT_GT(rungs[3].at("prefix_hit_rate").get<double>(), 0.0);
  auto cap = [&](size_t k) { return rungs[k].at("kv_capacity_tokens").get<int64_t>(); };
  auto bpt = [&](size_t k) { return rungs[k].at("applied").at("kv_bytes_per_token").get<int64_t>(); };
  EXPECT_GE(cap(4), 2 * cap(3));
  EXPECT_EQ(bpt(3), 1280);  // stories260K: 5 layers, 4 kv heads x 8
  EXPECT_EQ(bpt(4), 640);
  EXPECT_EQ(bpt(5), 400);
  EXPECT_GT(cap(5), cap(4));
  EXPECT_LT(bpt(6), bpt(4));
  EXPECT_GT(cap(6), cap(4));
  EXPECT_GT(rungs[4].at("kld_mean").get<double>(), 0.0);
  EXPECT_LT(rungs[4].at("kld_mean").get<double>(), 1e-3);
  EXPECT_GT(rungs[5].at("kld_mean").get<double>(), rungs[4].at("kld_mean").get<double>());
  // stories260K is F32: Q8_0 at least halves the weights (its ffn_down rows, 172 long, stay f16), the Q4_0 mix
  // shrinks them further; the 4-bit rungs lose more than the 8-bit one.
  const double w0 = rungs[0].at("weight_bytes").get<double>();
  EXPECT_LT(rungs[7].at("weight_bytes").get<double>(), 0.5 * w0);
  EXPECT_LT(rungs[8].at("weight_bytes").get<double>(), rungs[7].at("weight_bytes").get<double>());
  for (size_t k = 8; k < 11; ++k) {
    EXPECT_EQ(rungs[k].at("weight_bytes").get<double>(), rungs[8].at("weight_bytes").get<double>()) << k;
    EXPECT_GT(rungs[k].at("kld_mean").get<double>(), rungs[7].at("kld_mean").get<double>()) << k;
  }
  EXPECT_LT(rungs[7].at("kld_mean").get<double>(), 5e-3);
  // Skip plans: the looser budget skips more and loses more; early exit at threshold 0 exits every decode row
  // the engine let exit (lone rows), and loses more than at 0.9.
  EXPECT_GT(rungs[12].at("kld_mean").get<double>(), rungs[4].at("kld_mean").get<double>() + 0.01);  // as stored, f16
  EXPECT_GT(rungs[13].at("kld_mean").get<double>(), rungs[12].at("kld_mean").get<double>());
  EXPECT_DOUBLE_EQ(rungs[15].at("early_exit_share").get<double>(), 1.0);
  EXPECT_GT(rungs[15].at("kld_mean").get<double>(), rungs[14].at("kld_mean").get<double>());
  // Without a plan the plan rung is reported as skipped, not run silently without one.
  auto s = test::run_command("TINFER_SHARED=" + shared + " " + test::tinfer_bin() + " bench ladder -m " + model +
                             " --tiny --kv-memory 8M --ctx 256 --max-seqs 8 -t 2 --json 2>&1");
  ASSERT_EQ(s.status, 0) << s.out;
  const auto js = nlohmann::json::parse(s.out.substr(s.out.rfind("\n{") + 1));
  EXPECT_NE(js.at("rungs")[6].at("skipped").get<std::string>().find("--kv-plan"), std::string::npos);
  EXPECT_NE(js.at("rungs")[12].at("skipped").get<std::string>().find("--ladder-skip-plans"), std::string::npos);
  EXPECT_NE(js.at("rungs")[15].at("skipped").get<std::string>().find("--ladder-exit"), std::string::npos);
}

TEST(Cli, MissingModelFile) { expect_error("run -m /nonexistent/model.gguf -p hi", "does not exist"); }
// A word that is neither a file nor a known model name: the error lists the names (cli/model_names.h).
TEST(Cli, UnknownModelNameListsTheKnownOnes) {
  expect_error("run -m no-such-model -p hi", "known: smollm2-135m, gemma3-270m, qwen2.5-coder-0.5b");
  expect_error("serve -m no-such-model", "neither a file nor a known model name");
}

TEST(Cli, WrongMagic) {
  std::string f = temp_file("magic.gguf", std::string("NOPE") + std::string(100, '\0'));
  expect_error("info -m " + f, f);
}

TEST(Cli, TruncatedGguf) {
  std::string model = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  std::ifstream in(model, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  for (size_t cut : {size_t(3), size_t(20), size_t(1000), bytes.size() / 2, bytes.size() - 1}) {
    std::string f = temp_file("trunc.gguf", bytes.substr(0, cut));
    auto r = test::run_command(test::tinfer_bin() + " run -m " + f + " -p hi -n 1 2>&1");
    EXPECT_EQ(r.status, 1) << "cut " << cut << ": " << r.out;
    EXPECT_NE(r.out.find("error"), std::string::npos) << r.out;
  }
}

TEST(Cli, UnknownArchitecture) {
  std::string model = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  std::ifstream in(model, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto pos = bytes.find("llama", bytes.find("general.architecture"));
  ASSERT_NE(pos, std::string::npos);
  bytes.replace(pos, 5, "zlama");
  expect_error("run -m " + temp_file("arch.gguf", bytes) + " -p hi", "unknown architecture 'zlama'");
}

TEST(Cli, BadArguments) {
  std::string model = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  expect_error("run -m " + model + " --temp -1", "temperature");
  expect_error("run -m " + model + " -n abc", "integer");
  expect_error("run -m " + model + " --bogus", "unknown option");
  expect_error("synth --like gpt-5 -o /tmp/x.gguf", "unknown --like");
}

TEST(Cli, RunPrintsOnlyTheContinuation) {
  std::string model = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  auto r = test::run_command(test::tinfer_bin() + " run -m " + model + " -p '' --temp 0 -n 12 2>/dev/null");
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("Once upon a time, there was a little girl", 0), 0u) << r.out;
}

// run --spec goes through the engine's speculative decoding; greedy, its text is the plain run's (speculation is
// exact), and stderr carries bench spec's acceptance figures.
TEST(Cli, RunSpecNgramMatchesPlainRun) {
  std::string model = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  const std::string cmd = test::tinfer_bin() + " run -m " + model + " -p 'Once upon a time' --temp 0 -n 48 -t 2";
  auto plain = test::run_command(cmd + " 2>/dev/null");
  ASSERT_EQ(plain.status, 0) << plain.out;
  ASSERT_FALSE(plain.out.empty());
  auto spec = test::run_command(cmd + " --spec ngram 2>/dev/null");
  ASSERT_EQ(spec.status, 0) << spec.out;
  EXPECT_EQ(spec.out, plain.out);
  auto err = test::run_command(cmd + " --spec ngram 2>&1 >/dev/null");
  ASSERT_EQ(err.status, 0) << err.out;
  for (const char* want : {"spec ngram:", "acceptance", "tokens/verify step"})
    EXPECT_NE(err.out.find(want), std::string::npos) << want << "\n" << err.out;
  expect_error("run -m " + model + " --spec bogus", "--spec must be none, ngram, draft or self");
}

// bench ladder --tiny runs as documented, without -c: the rungs without chunked prefill need a numeric context
// (the ladder's default: the workload's longest request), not the model's 0.
TEST(Cli, BenchLadderTinyRunsWithoutCtx) {
  std::string model = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  const std::string shared = model.substr(0, model.size() - std::string("models/stories260K.gguf").size());
  auto r = test::run_command("TINFER_SHARED=" + shared + " " + test::tinfer_bin() + " bench ladder -m " + model +
                             " --tiny -t 2 --json 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.rfind("\n{") + 1));
  ASSERT_EQ(j.at("rungs").size(), 16u);
  EXPECT_GT(j.at("rungs")[0].at("total_tok_s").get<double>(), 0);
}

// The decode sweep times a fixed batch: with a 32-token step budget, 32 prompts of 64 tokens prefill over
// 64 steps, so the first ones admitted decode all the while; none may finish inside the timed steps (the
// tool refuses such a point), and every point reports its batch size.
TEST(Cli, DecodeSweepTimesFullBatches) {
  std::string model = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  auto r = test::run_command(test::tinfer_bin() + " bench throughput -m " + model +
                             " -t 2 --kv-memory 64M --max-batched-tokens 32 --sweep-batch 1,8,32 --sweep-steps 3"
                             " --json 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const char* b : {"\"batch\":1,", "\"batch\":8,", "\"batch\":32,"})
    EXPECT_NE(r.out.find(b), std::string::npos) << b << " in: " << r.out;
}

}  // namespace
}  // namespace tinfer

// --chat-template FILE replaces the model's template; one outside the supported Jinja subset stops the
// command before any work, naming the file, the line and the construct.
namespace tinfer {
namespace {
TEST(Cli, ChatTemplateFileOverridesAndUnsupportedFailsAtLoad) {
  std::string model = test::shared_file("models/stories260K.gguf");
  TINFER_REQUIRE_FILE(model, "models/stories260K.gguf");
  const std::string bad = temp_file("bad.jinja", "{% for m in messages %}\n{% include 'x.jinja' %}{% endfor %}");
  expect_error("run -m " + model + " --chat --chat-template " + bad + " -p hi -n 2", "line 2: unsupported tag 'include'");
  const std::string good = temp_file("good.jinja", "{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}");
  auto r = test::run_command(test::tinfer_bin() + " run -m " + model + " --chat --chat-template " + good +
                             " -p 'Once upon' -n 2 --temp 0 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
}
}  // namespace
}  // namespace tinfer

// The tinfer binary on bad input: each a clear error message and a non-zero exit, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

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
  for (std::string cmd : {"run", "chat", "info", "ppl", "synth", "bench", "bench throughput", "bench serve", "serve", "tokenize"}) {
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

TEST(Cli, MissingModelFile) { expect_error("run -m /nonexistent/model.gguf -p hi", "does not exist"); }

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

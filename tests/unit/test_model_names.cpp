// Known model names (tools/tinfer/cli/model_names.h): a name resolves to its file in the first models
// directory that has it, paths pass through untouched, and anything else is an Error listing the names.
#include <gtest/gtest.h>

#include <fstream>

#include "cli/args.h"
#include "cli/model_names.h"
#include "common/temp_dir.h"
#include "tinfer/error.h"

namespace tinfer::cli {
namespace {

std::string error_of(const std::string& value, const std::vector<std::string>& dirs) {
  try {
    resolve_model(value, dirs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelNames, TableNamesTheSetupModels) {
  std::vector<std::string> names;
  for (const auto& m : known_models()) names.emplace_back(m.name);
  EXPECT_EQ(names, (std::vector<std::string>{"smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"}));
  EXPECT_EQ(known_model_list(), "smollm2-135m, gemma3-270m, qwen2.5-coder-0.5b");
}

TEST(ModelNames, NameResolvesToTheFirstDirectoryHoldingItsFile) {
  test::TempDir a("model_names_a"), b("model_names_b");
  std::ofstream(b.file("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")) << "x";
  EXPECT_EQ(resolve_model("qwen2.5-coder-0.5b", {a.path.string(), b.path.string()}),
            b.file("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"));
  std::ofstream(a.file("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")) << "x";
  EXPECT_EQ(resolve_model("qwen2.5-coder-0.5b", {a.path.string(), b.path.string()}),
            a.file("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"));
}

TEST(ModelNames, PathsPassThroughUntouched) {
  test::TempDir d("model_names_p");
  std::ofstream(d.file("mine")) << "x";
  const std::vector<std::string> none;
  EXPECT_EQ(resolve_model(d.file("mine"), none), d.file("mine"));      // an existing file, whatever its name
  EXPECT_EQ(resolve_model(d.path.string(), none), d.path.string());  // a directory (an HF checkpoint)
  // Absent but path-like: left to the loader, whose "does not exist" error names the file.
  EXPECT_EQ(resolve_model("/nonexistent/model.gguf", none), "/nonexistent/model.gguf");
  EXPECT_EQ(resolve_model("model.gguf", none), "model.gguf");
  EXPECT_EQ(resolve_model("stories.bin", none), "stories.bin");
}

TEST(ModelNames, UnknownWordListsTheNames) {
  const std::string e = error_of("qwen-7b", {});
  EXPECT_NE(e.find("'qwen-7b' is neither a file nor a known model name"), std::string::npos) << e;
  EXPECT_NE(e.find("smollm2-135m, gemma3-270m, qwen2.5-coder-0.5b"), std::string::npos) << e;
}

TEST(ModelNames, KnownNameWithoutItsFileSaysWhereItLooked) {
  test::TempDir d("model_names_e");
  const std::string e = error_of("gemma3-270m", {d.path.string()});
  EXPECT_NE(e.find("gemma-3-270m-q4_k_m.gguf, not found in " + d.path.string()), std::string::npos) << e;
  EXPECT_NE(e.find("scripts/setup.sh"), std::string::npos) << e;
}

// Args resolves the options declared model_file (and only those) as it parses.
TEST(ModelNames, ArgsResolvesModelFileOptions) {
  test::TempDir d("model_names_args");
  std::ofstream(d.file("SmolLM2-135M-Instruct.Q4_1.gguf")) << "x";
  ::setenv("TINFER_MODELS", d.path.c_str(), 1);
  const std::vector<OptionSpec> spec = {{"-m,--model", "model", true, "", false, true}, {"--name", "plain"}};
  const char* argv[] = {"-m", "smollm2-135m", "--name", "smollm2-135m"};
  Args args(4, const_cast<char**>(argv), spec, "test");
  EXPECT_EQ(args.str("--model"), d.file("SmolLM2-135M-Instruct.Q4_1.gguf"));
  EXPECT_EQ(args.str("--name"), "smollm2-135m");
  const char* bad[] = {"--model=nope"};
  EXPECT_THROW(Args(1, const_cast<char**>(bad), spec, "test"), Error);
  ::unsetenv("TINFER_MODELS");
}

}  // namespace
}  // namespace tinfer::cli

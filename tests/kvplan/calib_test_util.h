// Shared pieces of the calibrate-* end-to-end tests: temporary paths, running the tinfer binary, expecting a
// refusal, the TinyStories calibration slice, and a command's last JSON line.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/test_env.h"
#include "golden/golden_util.h"

namespace tinfer::calib_test {

// A path in the test temp dir, unique to this process and `prefix`.
inline std::string tmp(const std::string& prefix, const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / (prefix + std::to_string(::getpid()) + "_" + name)).string();
}

inline test::RunResult tinfer(const std::string& args) {
  return test::run_command(test::tinfer_bin() + " " + args + " 2>&1");
}

inline void expect_error(const std::string& args, const std::string& needle) {
  const auto r = tinfer(args);
  EXPECT_EQ(r.status, 1) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.out;
}

// `bytes` bytes of the TinyStories file from byte 400000 into `path` (disjoint from the evaluation slice, its
// first 4000 bytes); "" when the corpus is absent.
inline std::string stories_calib_text(const std::string& path, size_t bytes = 12000) {
  const std::string src = test::shared_file("corpus/tinystories-valid-head.txt");
  if (src.empty()) return {};
  std::ifstream in(src, std::ios::binary);
  in.seekg(400000);
  std::string text(bytes, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

inline nlohmann::json last_json(const std::string& out) { return nlohmann::json::parse(out.substr(out.rfind("\n{") + 1)); }

}  // namespace tinfer::calib_test

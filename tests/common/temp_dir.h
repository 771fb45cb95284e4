// Test helper: a fresh directory per test (mkdtemp under the system temp dir), removed with its contents
// at scope exit.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

namespace tinfer::test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "tinfer_test") {
    std::string t = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    path = mkdtemp(t.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& n) const { return (path / n).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> v;
    for (const auto& e : std::filesystem::directory_iterator(path)) v.push_back(e.path().filename().string());
    return v;
  }
};

}  // namespace tinfer::test

// Test helpers implementation.
#include "common/test_env.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace tinfer::test {

std::string shared_dir() {
  if (const char* e = std::getenv("TINFER_SHARED"); e && *e) return e;
  return TINFER_SHARED_DEFAULT;
}

std::string shared_file(const std::string& rel) {
  std::string p = shared_dir() + "/" + rel;
  return std::filesystem::exists(p) ? p : std::string();
}

std::string read_shared_text(const std::string& rel) {
  std::ifstream in(shared_file(rel), std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string default_model() {
  if (const char* e = std::getenv("TINFER_DEFAULT_MODEL"); e && *e)
    return std::filesystem::exists(e) ? std::string(e) : std::string();
  std::string p = std::string(TINFER_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  return std::filesystem::exists(p) ? p : std::string();
}

std::string tinfer_bin() {
  if (const char* e = std::getenv("TINFER_BIN"); e && *e) return e;
  return "tinfer";
}

}  // namespace tinfer::test

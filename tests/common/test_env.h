// Test helpers: where ../shared is, and a visible skip when a fixture is absent.
#pragma once
#include <gtest/gtest.h>

#include <string>

namespace tinfer::test {

// $TINFER_SHARED, else ../shared beside the repository root.
std::string shared_dir();
// Full path of a file under shared/; empty string if it does not exist.
std::string shared_file(const std::string& rel);
// The whole text of a file under shared/ ("" if it does not exist).
std::string read_shared_text(const std::string& rel);
// Path of the default model if the set-up fetched it ($TINFER_DEFAULT_MODEL or models/ in the repo); empty if absent.
std::string default_model();
// Path of the tinfer binary under test ($TINFER_BIN).
std::string tinfer_bin();

}  // namespace tinfer::test

// Skips the current test with a visible reason when `path` is empty (fixture absent).
#define TINFER_REQUIRE_FILE(path, what)                                    \
  do {                                                                     \
    if ((path).empty()) GTEST_SKIP() << "fixture absent: " << (what);      \
  } while (0)

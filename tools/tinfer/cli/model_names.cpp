// The known-model table and the name -> file resolution (see model_names.h).
#include "cli/model_names.h"

#include <cstdlib>
#include <filesystem>

#include "tinfer/error.h"

#ifndef TINFER_MODELS_DEFAULT
#define TINFER_MODELS_DEFAULT ""
#endif

namespace tinfer::cli {

namespace fs = std::filesystem;

const std::vector<KnownModel>& known_models() {
  static const std::vector<KnownModel> table = {
      {"smollm2-135m", "SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct, Q4_1 (the default model)"},
      {"gemma3-270m", "gemma-3-270m-q4_k_m.gguf", "Gemma 3 270M, Q4_K_M"},
      {"qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
       "Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (tool calls, Hermes <tool_call> format)"},
  };
  return table;
}

std::vector<std::string> model_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("TINFER_MODELS"); env && *env) dirs.emplace_back(env);
  dirs.emplace_back("models");
  if (*TINFER_MODELS_DEFAULT) dirs.emplace_back(TINFER_MODELS_DEFAULT);
  return dirs;
}

namespace {

bool looks_like_path(const std::string& v) {
  const auto ends_with = [&](const char* s) { return fs::path(v).extension() == s; };
  return v.find('/') != std::string::npos || ends_with(".gguf") || ends_with(".bin");
}

}  // namespace

std::string known_model_list() {
  std::string out;
  for (const auto& m : known_models()) out += std::string(out.empty() ? "" : ", ") + m.name;
  return out;
}

std::string resolve_model(const std::string& value, const std::vector<std::string>& dirs) {
  std::error_code ec;
  if (value.empty() || fs::is_regular_file(value, ec) || fs::is_directory(value, ec) || looks_like_path(value))
    return value;
  for (const auto& m : known_models()) {
    if (value != m.name) continue;
    std::string searched;
    for (const auto& d : dirs) {
      const fs::path p = fs::path(d) / m.file;
      if (fs::is_regular_file(p, ec)) return p.string();
      searched += (searched.empty() ? "" : ", ") + d;
    }
    fail("model '" + value + "' (" + m.what + ") is the file " + m.file + ", not found in " + searched +
         " (scripts/setup.sh fetches it; $TINFER_MODELS names another directory)");
  }
  fail("model '" + value + "' is neither a file nor a known model name (known: " + known_model_list() + ")");
}

}  // namespace tinfer::cli

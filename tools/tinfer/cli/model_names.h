// Known model names: `-m qwen2.5-coder-0.5b` instead of `-m models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf`.
// The table holds the models scripts/setup.sh fetches into models/; an option declared with
// OptionSpec::model_file resolves its value here when Args parses it, so every command that takes a model
// (run, serve, chat, bench, ppl, info, tokenize, kv-plan, derive, calibrate-*, --draft-model, routing) takes
// a name too.
#pragma once
#include <string>
#include <vector>

namespace tinfer::cli {

struct KnownModel {
  const char* name;  // what -m takes
  const char* file;  // under a models directory
  const char* what;  // one line for the error message and docs
};

const std::vector<KnownModel>& known_models();
std::string known_model_list();  // "smollm2-135m, gemma3-270m, ..." for help and error text

// The directories searched for a known model's file, in order: $TINFER_MODELS, ./models, and the models/ of
// the source tree this binary was built from.
std::vector<std::string> model_dirs();

// `value` unchanged when it is an existing file or looks like a path (has a '/' or ends in .gguf/.bin, so the
// loader's own "does not exist" error stays); a known name becomes the first existing models_dirs[i]/file.
// Error for a known name whose file is absent (run scripts/setup.sh) and for any other word (lists the names).
std::string resolve_model(const std::string& value, const std::vector<std::string>& dirs);
inline std::string resolve_model(const std::string& value) { return resolve_model(value, model_dirs()); }

}  // namespace tinfer::cli

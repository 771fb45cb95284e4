// The layer-skip plan file: which decoder sub-blocks to leave out, chosen by `tinfer calibrate-skip`, naming the
// model it was made for, applied with --skip-plan. JSON:
//   {"format":"tinfer-skip-plan","version":1,
//    "model":{"file":"...","name":"...","n_layers":30,"n_kv_heads":3,"head_dim":64,"fingerprint":"fnv1a64:..."},
//    "layers":["none","mlp","attn","both", ...],   // one per layer, in order: the sub-blocks skipped
//    "calibration":{...}}                          // how it was chosen (budget, measured quality, ...)
// Reading validates everything a plan is used for and names the problem; "calibration" is a record for people,
// checked only to be an object when present.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "plans/layer_skip.h"
#include "model/model_identity.h"

namespace tinfer {

inline constexpr const char* kSkipPlanFormat = "tinfer-skip-plan";
inline constexpr int kSkipPlanVersion = 1;

struct SkipPlanFile {
  ModelIdentity model;
  LayerSkip skip;  // [model.n_layers] each
  nlohmann::json calibration = nlohmann::json::object();
};

// "none" | "attn" | "mlp" | "both" for layer l of skip.
const char* skip_layer_name(const LayerSkip& skip, int64_t l);
nlohmann::json skip_plan_json(const SkipPlanFile& plan);
// Parses and validates a plan's text; Error "<origin>: <problem>" (malformed JSON, wrong format or version,
// missing or mistyped field, an unknown entry, a layer count that disagrees with the model section).
SkipPlanFile parse_skip_plan(const std::string& text, const std::string& origin);
SkipPlanFile read_skip_plan(const std::string& path);
void write_skip_plan(const SkipPlanFile& plan, const std::string& path);
// Reads the plan at `path` and checks it was made for `model`: the LayerSkip to apply, or Error naming both
// models (or the file's problem).
LayerSkip load_skip_plan(const std::string& path, const ModelIdentity& model);

}  // namespace tinfer

// The layer-skip plan file: which decoder sub-blocks to leave out, chosen by `tinfer calibrate-skip`, naming the
// model it was made for, applied with --skip-plan. The plans' JSON skeleton (plans/plan_json.h) of kind
// "tinfer-skip-plan" with
//   "layers":["none","mlp","attn","both", ...]   // each layer's skipped sub-blocks, in order
#pragma once
#include "tinfer/layer_skip.h"
#include "plans/plan_json.h"  // PlanKind, ModelIdentity, nlohmann::json

namespace tinfer {

inline constexpr PlanKind kSkipPlan{"tinfer-skip-plan", 1, "skip plan"};  // format, version, name in messages

struct SkipPlanFile {
  ModelIdentity model;
  LayerSkip skip;  // [model.n_layers] each
  nlohmann::json calibration = nlohmann::json::object();
};

// "none" | "attn" | "mlp" | "both" for layer l of skip.
const char* skip_layer_name(const LayerSkip& skip, int64_t l);
nlohmann::json skip_plan_json(const SkipPlanFile& plan);
// Parses and validates a plan's text; Error "<origin>: <problem>" (the skeleton's, an unknown entry, a plan
// that keeps no layer's attention).
SkipPlanFile parse_skip_plan(const std::string& text, const std::string& origin);
SkipPlanFile read_skip_plan(const std::string& path);
void write_skip_plan(const SkipPlanFile& plan, const std::string& path);
// Reads the plan at `path` and checks it was made for `model`: the LayerSkip to apply, or Error naming both
// models (or the file's problem).
LayerSkip load_skip_plan(const std::string& path, const ModelIdentity& model);

}  // namespace tinfer

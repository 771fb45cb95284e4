// The KV plan file: per-layer K and V element types chosen by `tinfer calibrate-kv`, naming the model it was
// made for, applied with --kv-plan. JSON:
//   {"format":"tinfer-kv-plan","version":1,
//    "model":{"file":"...","name":"...","n_layers":30,"n_kv_heads":3,"head_dim":64,"fingerprint":"fnv1a64:..."},
//    "layers":[{"k":"int8","v":"int4"}, ...],          // one per layer, in order
//    "calibration":{...}}                               // how it was chosen (budget, measured quality, ...)
// Reading validates everything a plan is used for and names the problem; "calibration" is a record for people,
// checked only to be an object when present.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "plans/kv_precision.h"
#include "model/model_identity.h"

namespace tinfer {

inline constexpr const char* kKvPlanFormat = "tinfer-kv-plan";
inline constexpr int kKvPlanVersion = 1;

struct KvPlanFile {
  ModelIdentity model;
  KvPrecision precision;  // [model.n_layers]
  nlohmann::json calibration = nlohmann::json::object();
};

nlohmann::json kv_plan_json(const KvPlanFile& plan);
// Parses and validates a plan's text; Error "<origin>: <problem>" (malformed JSON, wrong format or version,
// missing or mistyped field, unknown type, a layer count that disagrees with the model section).
KvPlanFile parse_kv_plan(const std::string& text, const std::string& origin);
KvPlanFile read_kv_plan(const std::string& path);
// Writes through a temporary file renamed into place (no half-written plan on failure).
void write_kv_plan(const KvPlanFile& plan, const std::string& path);
// Error naming both models when the plan was made for another model (fingerprint, layer count or KV shape).
void check_kv_plan_model(const KvPlanFile& plan, const ModelIdentity& model, const std::string& origin);

}  // namespace tinfer

// The KV plan file: per-layer K and V element types chosen by `tinfer calibrate-kv`, naming the model it was
// made for, applied with --kv-plan. The plans' JSON skeleton (plans/plan_json.h) of kind "tinfer-kv-plan" with
//   "layers":[{"k":"int8","v":"int4"}, ...]     // each layer's K and V types, in order
//   "k_smooth":[[...], [], ...]                  // optional: per layer, [] or n_kv_heads x head_dim factors > 0
#pragma once
#include "tinfer/kv_precision.h"
#include "plans/plan_json.h"  // PlanKind, ModelIdentity, nlohmann::json

namespace tinfer {

inline constexpr PlanKind kKvPlan{"tinfer-kv-plan", 1, "KV plan"};  // format, version, name in messages

struct KvPlanFile {
  ModelIdentity model;
  KvPrecision precision;  // [model.n_layers]
  nlohmann::json calibration = nlohmann::json::object();
};

nlohmann::json kv_plan_json(const KvPlanFile& plan);
// Parses and validates a plan's text; Error "<origin>: <problem>" (the skeleton's, an unknown type, a bad
// k_smooth entry).
KvPlanFile parse_kv_plan(const std::string& text, const std::string& origin);
KvPlanFile read_kv_plan(const std::string& path);
// Writes through a temporary file renamed into place (no half-written plan on failure).
void write_kv_plan(const KvPlanFile& plan, const std::string& path);
// Error naming both models when the plan was made for another model (fingerprint, layer count or KV shape).
void check_kv_plan_model(const KvPlanFile& plan, const ModelIdentity& model, const std::string& origin);

}  // namespace tinfer

// The one JSON skeleton every plan file shares (plans/kv_plan_file.h, plans/skip_plan_file.h):
//   {"format":"tinfer-<kind>-plan","version":1,
//    "model":{"file":"...","name":"...","n_layers":30,"n_kv_heads":3,"head_dim":64,"fingerprint":"fnv1a64:..."},
//    "layers":[...],          // one entry per layer, in order; what an entry says is the kind's
//    ...                      // the kind's own members, if any
//    "calibration":{...}}     // how it was chosen (budget, measured quality, ...)
// Here: the kind (format, version, the name messages use), the skeleton written and read back (header, the
// "model" section -- the ModelIdentity the plan was made for -- and its check against the model in use, the
// "layers" count, "calibration"), the JSON accessors that name the field at fault, and reading and atomic
// writing of the text. Reading validates everything a plan is used for and names the problem; "calibration" is
// a record for people, checked only to be an object when present.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "tinfer/error.h"
#include "model/model_identity.h"

namespace tinfer {

struct PlanKind {
  const char* format;  // the "format" member, e.g. "tinfer-kv-plan"
  int version;         // the only "version" this build reads and writes
  const char* what;    // the plan's name in messages, e.g. "KV plan"
};

// The member `key` of object `o` (at `where`) with the JSON type `want`; Error naming it otherwise.
const nlohmann::json& json_member(const nlohmann::json& o, const std::string& key, nlohmann::json::value_t want,
                                  const std::string& where, const char* want_name);
int64_t json_positive_int(const nlohmann::json& o, const std::string& key, const std::string& where);
std::string json_string(const nlohmann::json& o, const std::string& key, const std::string& where);

// The skeleton of a plan of `kind` for `model` with these per-layer entries; the caller adds the kind's members.
nlohmann::json plan_skeleton_json(const PlanKind& kind, const ModelIdentity& model, nlohmann::json layers,
                                  const nlohmann::json& calibration);

// The skeleton read back: the whole object (the kind's members are read from it), the model it names, and its
// "layers", an array of exactly model.n_layers entries (not looked into).
struct PlanSkeleton {
  nlohmann::json plan;
  ModelIdentity model;
  const nlohmann::json& layers() const { return plan.at("layers"); }
};
// Error "not valid JSON: ...", "not a <what>: ...", "unsupported plan version ...", a missing or mistyped
// "model" field, or a "layers" count that disagrees with "model".
PlanSkeleton parse_plan_skeleton(const std::string& text, const PlanKind& kind);

// The plan's optional "calibration" record (an object; {} when absent): for people, checked only for its type.
nlohmann::json plan_calibration(const nlohmann::json& plan);

// A plan file struct (`model`, `calibration` and the kind's members) from `text`: the skeleton, then
// body(skeleton, plan) reads the per-layer entries and the kind's members, then "calibration". Every Error is
// rethrown as "<origin>: <problem>".
template <class Plan, class Body>
Plan parse_plan(const std::string& text, const PlanKind& kind, const std::string& origin, Body&& body) {
  try {
    const PlanSkeleton s = parse_plan_skeleton(text, kind);
    Plan p;
    p.model = s.model;
    body(s, p);
    p.calibration = plan_calibration(s.plan);
    return p;
  } catch (const Error& e) {
    fail(origin + ": " + e.what());
  }
}

// "<what> '<path>'": how messages name a plan file.
std::string plan_origin(const PlanKind& kind, const std::string& path);

nlohmann::json model_identity_json(const ModelIdentity& m);
// The plan's "model" section; Error naming the missing or mistyped field.
ModelIdentity parse_model_identity(const nlohmann::json& plan);
// Error "<origin> was made for another model: '<plan's>' (...), not '<this>' (...)" unless both are the same
// model (fingerprint, layer count and KV shape).
void check_plan_model(const ModelIdentity& plan, const ModelIdentity& model, const std::string& origin);

// The whole file; Error "cannot read <what> '<path>'".
std::string read_plan_text(const std::string& path, const PlanKind& kind);
// The plan as written: JSON indented by one space, a final newline, through a temporary file renamed into place
// (no half-written plan on failure).
void write_plan(const nlohmann::json& plan, const std::string& path);

}  // namespace tinfer

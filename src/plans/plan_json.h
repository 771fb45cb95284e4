// What every plan file of the calibrate-* commands shares (kv_plan_file.h, skip_plan_file.h): the JSON
// accessors that name the field at fault, the "model" section (the ModelIdentity the plan was made for) and its
// check against the model in use, the header ("format", "version"), and reading and atomic writing of the text.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "model/model_identity.h"

namespace tinfer {

// The member `key` of object `o` (at `where`) with the JSON type `want`; Error naming it otherwise.
const nlohmann::json& json_member(const nlohmann::json& o, const std::string& key, nlohmann::json::value_t want,
                                  const std::string& where, const char* want_name);
int64_t json_positive_int(const nlohmann::json& o, const std::string& key, const std::string& where);
std::string json_string(const nlohmann::json& o, const std::string& key, const std::string& where);

// Parses `text` as a JSON object whose "format" is `format` and "version" is `version`; Error otherwise
// ("not valid JSON: ...", "not a <what>: ...", "unsupported plan version ...").
nlohmann::json parse_plan_header(const std::string& text, const char* format, int version, const char* what);

// The plan's optional "calibration" record (an object; {} when absent): for people, checked only for its type.
nlohmann::json plan_calibration(const nlohmann::json& plan);

nlohmann::json model_identity_json(const ModelIdentity& m);
// The plan's "model" section; Error naming the missing or mistyped field.
ModelIdentity parse_model_identity(const nlohmann::json& plan);
// Error "<origin> was made for another model: '<plan's>' (...), not '<this>' (...)" unless both are the same
// model (fingerprint, layer count and KV shape).
void check_plan_model(const ModelIdentity& plan, const ModelIdentity& model, const std::string& origin);

// The whole file; Error "cannot read <what> '<path>'".
std::string read_plan_text(const std::string& path, const char* what);
// Writes through a temporary file renamed into place (no half-written plan on failure).
void write_plan_text(const std::string& text, const std::string& path);

}  // namespace tinfer

// `tinfer kv-plan`'s output: the model's shape, the KV capacity report as a readable table, or as one JSON object.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "engine/kv_capacity.h"
#include "model/model_shape.h"

namespace tinfer::cli {

std::string kv_plan_table(const ModelShape& shape, const KvCapacityReport& r);
nlohmann::json kv_plan_json(const ModelShape& shape, const KvCapacityReport& r);

}  // namespace tinfer::cli

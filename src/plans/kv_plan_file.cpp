// KV plan file: its layer entries and "k_smooth" on the shared skeleton (see plans/kv_plan_file.h, plans/plan_json.h).
#include "plans/kv_plan_file.h"

#include <cmath>

#include "tinfer/error.h"
#include "plans/plan_json.h"

namespace tinfer {

using nlohmann::json;

namespace {

KvDtype dtype_of(const json& layer, const char* key, size_t l) {
  const std::string where = "layers[" + std::to_string(l) + "]";
  const std::string s = json_string(layer, key, where);
  KvDtype t;
  check(parse_kv_dtype(s, &t), where + ": unknown " + key + " type '" + s + "' (" + kKvDtypeNames + ")");
  return t;
}

// "k_smooth" (optional): [n_layers][empty or n_kv_heads * head_dim] positive factors.
std::vector<std::vector<float>> k_smooth_of(const json& plan, const ModelIdentity& m) {
  std::vector<std::vector<float>> out;
  if (!plan.contains("k_smooth")) return out;
  const json& ks = json_member(plan, "k_smooth", json::value_t::array, "the plan", "an array");
  check(ks.empty() || int64_t(ks.size()) == m.n_layers,
        "\"k_smooth\" lists " + std::to_string(ks.size()) + " layers but \"model\" has " + std::to_string(m.n_layers));
  for (size_t l = 0; l < ks.size(); ++l) {
    const std::string where = "k_smooth[" + std::to_string(l) + "]";
    check(ks[l].is_array() && (ks[l].empty() || int64_t(ks[l].size()) == m.n_kv_heads * m.head_dim),
          where + " must be empty or n_kv_heads x head_dim = " + std::to_string(m.n_kv_heads * m.head_dim) + " numbers");
    std::vector<float> f;
    for (const json& x : ks[l]) {
      check(x.is_number() && std::isfinite(x.get<double>()) && x.get<double>() > 0,
            where + ": factors must be positive numbers, got " + x.dump());
      f.push_back(x.get<float>());
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

json kv_plan_json(const KvPlanFile& p) {
  json layers = json::array();
  for (const KvLayerTypes& t : p.precision.layers) layers.push_back({{"k", kv_dtype_name(t.k)}, {"v", kv_dtype_name(t.v)}});
  json j = plan_skeleton_json(kKvPlan, p.model, std::move(layers), p.calibration);
  j["k_smooth"] = p.precision.k_smooth;
  return j;
}

KvPlanFile parse_kv_plan(const std::string& text, const std::string& origin) {
  return parse_plan<KvPlanFile>(text, kKvPlan, origin, [](const PlanSkeleton& s, KvPlanFile& p) {
    const json& layers = s.layers();
    for (size_t l = 0; l < layers.size(); ++l) {
      check(layers[l].is_object(), "layers[" + std::to_string(l) + "] must be an object like {\"k\":\"int8\",\"v\":\"int4\"}");
      p.precision.layers.push_back({dtype_of(layers[l], "k", l), dtype_of(layers[l], "v", l)});
    }
    p.precision.k_smooth = k_smooth_of(s.plan, p.model);
  });
}

KvPlanFile read_kv_plan(const std::string& path) {
  return parse_kv_plan(read_plan_text(path, kKvPlan), plan_origin(kKvPlan, path));
}

void write_kv_plan(const KvPlanFile& plan, const std::string& path) { write_plan(kv_plan_json(plan), path); }

void check_kv_plan_model(const KvPlanFile& plan, const ModelIdentity& model, const std::string& origin) {
  check_plan_model(plan.model, model, origin);
}

}  // namespace tinfer

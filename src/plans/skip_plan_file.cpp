// Layer-skip plan file: its layer entries on the shared skeleton (see plans/skip_plan_file.h, plans/plan_json.h).
#include "plans/skip_plan_file.h"

#include "tinfer/error.h"
#include "plans/plan_json.h"

namespace tinfer {

using nlohmann::json;

namespace {
// Entry name -> (attention skipped, MLP skipped); the table both directions read.
struct SkipEntry {
  const char* name;
  bool attn, mlp;
};
constexpr SkipEntry kEntries[] = {{"none", false, false}, {"attn", true, false}, {"mlp", false, true}, {"both", true, true}};
}  // namespace

const char* skip_layer_name(const LayerSkip& skip, int64_t l) {
  for (const SkipEntry& e : kEntries)
    if (e.attn == skip.skips_attn(l) && e.mlp == skip.skips_mlp(l)) return e.name;
  return "none";  // unreachable: the table covers all four
}

json skip_plan_json(const SkipPlanFile& p) {
  json layers = json::array();
  for (int64_t l = 0; l < p.model.n_layers; ++l) layers.push_back(skip_layer_name(p.skip, l));
  return plan_skeleton_json(kSkipPlan, p.model, std::move(layers), p.calibration);
}

SkipPlanFile parse_skip_plan(const std::string& text, const std::string& origin) {
  return parse_plan<SkipPlanFile>(text, kSkipPlan, origin, [](const PlanSkeleton& s, SkipPlanFile& p) {
    const json& layers = s.layers();
    p.skip = LayerSkip::none(p.model.n_layers);
    for (size_t l = 0; l < layers.size(); ++l) {
      const SkipEntry* found = nullptr;
      for (const SkipEntry& e : kEntries)
        if (layers[l].is_string() && layers[l].get<std::string>() == e.name) found = &e;
      check(found != nullptr, "layers[" + std::to_string(l) + "] must be \"none\", \"attn\", \"mlp\" or \"both\", got " +
                                  layers[l].dump());
      p.skip.attn[l] = found->attn, p.skip.mlp[l] = found->mlp;
    }
    bool any_attention = false;
    for (uint8_t a : p.skip.attn) any_attention = any_attention || !a;
    check(any_attention, "the plan skips every layer's attention (no layer would hold KV)");
  });
}

SkipPlanFile read_skip_plan(const std::string& path) {
  return parse_skip_plan(read_plan_text(path, kSkipPlan), plan_origin(kSkipPlan, path));
}

void write_skip_plan(const SkipPlanFile& plan, const std::string& path) { write_plan(skip_plan_json(plan), path); }

LayerSkip load_skip_plan(const std::string& path, const ModelIdentity& model) {
  SkipPlanFile p = read_skip_plan(path);
  check_plan_model(p.model, model, plan_origin(kSkipPlan, path));
  return std::move(p.skip);
}

}  // namespace tinfer

// The plan files' shared JSON skeleton and accessors (see plans/plan_json.h).
#include "plans/plan_json.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tinfer/error.h"

namespace tinfer {

using nlohmann::json;

const json& json_member(const json& o, const std::string& key, json::value_t want, const std::string& where,
                        const char* want_name) {
  const auto it = o.find(key);
  check(it != o.end(), "missing \"" + key + "\" in " + where);
  const bool ok = it->type() == want || (want == json::value_t::number_integer && it->is_number_unsigned());
  check(ok, "\"" + key + "\" in " + where + " must be " + want_name + ", got " + it->dump());
  return *it;
}

int64_t json_positive_int(const json& o, const std::string& key, const std::string& where) {
  const int64_t v = json_member(o, key, json::value_t::number_integer, where, "an integer").get<int64_t>();
  check(v > 0, "\"" + key + "\" in " + where + " must be positive, got " + std::to_string(v));
  return v;
}

std::string json_string(const json& o, const std::string& key, const std::string& where) {
  return json_member(o, key, json::value_t::string, where, "a string").get<std::string>();
}

namespace {
// `text` as a JSON object whose "format" and "version" are the kind's.
json parse_plan_header(const std::string& text, const PlanKind& kind) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // a syntax error, or a number out of range
    fail(std::string("not valid JSON: ") + e.what());
  }
  check(j.is_object(), std::string("a ") + kind.what + " is a JSON object, got " + j.type_name());
  check(j.contains("format") && j["format"] == kind.format,
        std::string("not a ") + kind.what + ": \"format\" must be \"" + kind.format + "\", got " +
            (j.contains("format") ? j["format"].dump() : "nothing"));
  const json& v = json_member(j, "version", json::value_t::number_integer, "the plan", "an integer");
  check(v.get<int64_t>() == kind.version,
        "unsupported plan version " + v.dump() + " (this build reads version " + std::to_string(kind.version) + ")");
  return j;
}
}  // namespace

json plan_skeleton_json(const PlanKind& kind, const ModelIdentity& model, json layers, const json& calibration) {
  return {{"format", kind.format},
          {"version", kind.version},
          {"model", model_identity_json(model)},
          {"layers", std::move(layers)},
          {"calibration", calibration}};
}

PlanSkeleton parse_plan_skeleton(const std::string& text, const PlanKind& kind) {
  PlanSkeleton s{parse_plan_header(text, kind), {}};
  s.model = parse_model_identity(s.plan);
  const json& layers = json_member(s.plan, "layers", json::value_t::array, "the plan", "an array");
  check(int64_t(layers.size()) == s.model.n_layers, "\"layers\" lists " + std::to_string(layers.size()) +
                                                        " layers but \"model\" has " + std::to_string(s.model.n_layers));
  return s;
}

json plan_calibration(const json& plan) {
  if (!plan.contains("calibration")) return json::object();
  check(plan["calibration"].is_object(), "\"calibration\" must be an object");
  return plan["calibration"];
}

json model_identity_json(const ModelIdentity& m) {
  return {{"file", m.file},           {"name", m.name},         {"n_layers", m.n_layers},
          {"n_kv_heads", m.n_kv_heads}, {"head_dim", m.head_dim}, {"fingerprint", m.fingerprint}};
}

ModelIdentity parse_model_identity(const json& plan) {
  const json& m = json_member(plan, "model", json::value_t::object, "the plan", "an object");
  ModelIdentity id;
  id.file = json_string(m, "file", "\"model\"");
  id.name = json_string(m, "name", "\"model\"");
  id.fingerprint = json_string(m, "fingerprint", "\"model\"");
  check(!id.fingerprint.empty(), "\"fingerprint\" in \"model\" is empty");
  id.n_layers = json_positive_int(m, "n_layers", "\"model\"");
  id.n_kv_heads = json_positive_int(m, "n_kv_heads", "\"model\"");
  id.head_dim = json_positive_int(m, "head_dim", "\"model\"");
  return id;
}

namespace {
std::string describe(const ModelIdentity& m) {
  return "'" + (m.name.empty() ? m.file : m.name) + "' (" + m.file + ", " + std::to_string(m.n_layers) + " layers, " +
         std::to_string(m.n_kv_heads) + " kv heads x " + std::to_string(m.head_dim) + ", " + m.fingerprint + ")";
}
}  // namespace

void check_plan_model(const ModelIdentity& p, const ModelIdentity& model, const std::string& origin) {
  const bool same = p.fingerprint == model.fingerprint && p.n_layers == model.n_layers &&
                    p.n_kv_heads == model.n_kv_heads && p.head_dim == model.head_dim;
  check(same, origin + " was made for another model: " + describe(p) + ", not " + describe(model));
}

std::string plan_origin(const PlanKind& kind, const std::string& path) { return std::string(kind.what) + " '" + path + "'"; }

std::string read_plan_text(const std::string& path, const PlanKind& kind) {
  std::ifstream in(path, std::ios::binary);
  check(bool(in), "cannot read " + plan_origin(kind, path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_plan(const json& plan, const std::string& path) {
  const std::string text = plan.dump(1) + "\n", tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    check(bool(out), "cannot write '" + tmp + "'");
    out << text;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      fail("cannot write '" + tmp + "'");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail("cannot write '" + path + "': " + ec.message());
  }
}

}  // namespace tinfer

// KV plan file: JSON in and out, validation (see kv_plan_file.h).
#include "kv_plan_file.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace tinfer::cli {

using nlohmann::json;

namespace {

// The member `key` of object `o` (at `where`) with the JSON type `want`; Error naming it otherwise.
const json& member(const json& o, const std::string& key, json::value_t want, const std::string& where,
                   const char* want_name) {
  const auto it = o.find(key);
  check(it != o.end(), "missing \"" + key + "\" in " + where);
  const bool ok = it->type() == want || (want == json::value_t::number_integer && it->is_number_unsigned());
  check(ok, "\"" + key + "\" in " + where + " must be " + want_name + ", got " + it->dump());
  return *it;
}

int64_t positive_int(const json& o, const std::string& key, const std::string& where) {
  const int64_t v = member(o, key, json::value_t::number_integer, where, "an integer").get<int64_t>();
  check(v > 0, "\"" + key + "\" in " + where + " must be positive, got " + std::to_string(v));
  return v;
}

std::string string_of(const json& o, const std::string& key, const std::string& where) {
  return member(o, key, json::value_t::string, where, "a string").get<std::string>();
}

KvDtype dtype_of(const json& layer, const char* key, size_t l) {
  const std::string where = "layers[" + std::to_string(l) + "]";
  const std::string s = string_of(layer, key, where);
  KvDtype t;
  check(parse_kv_dtype(s, &t), where + ": unknown " + key + " type '" + s + "' (" + kKvDtypeNames + ")");
  return t;
}

std::string describe(const ModelIdentity& m) {
  return "'" + (m.name.empty() ? m.file : m.name) + "' (" + m.file + ", " + std::to_string(m.n_layers) + " layers, " +
         std::to_string(m.n_kv_heads) + " kv heads x " + std::to_string(m.head_dim) + ", " + m.fingerprint + ")";
}

}  // namespace

json kv_plan_json(const KvPlanFile& p) {
  json layers = json::array();
  for (const KvLayerTypes& t : p.precision.layers) layers.push_back({{"k", kv_dtype_name(t.k)}, {"v", kv_dtype_name(t.v)}});
  return {{"format", kKvPlanFormat},
          {"version", kKvPlanVersion},
          {"model",
           {{"file", p.model.file},
            {"name", p.model.name},
            {"n_layers", p.model.n_layers},
            {"n_kv_heads", p.model.n_kv_heads},
            {"head_dim", p.model.head_dim},
            {"fingerprint", p.model.fingerprint}}},
          {"layers", layers},
          {"k_smooth", p.precision.k_smooth},
          {"calibration", p.calibration}};
}

KvPlanFile parse_kv_plan(const std::string& text, const std::string& origin) {
  try {
    json j;
    try {
      j = json::parse(text);
    } catch (const json::parse_error& e) {
      fail(std::string("not valid JSON: ") + e.what());
    }
    check(j.is_object(), "a KV plan is a JSON object, got " + std::string(j.type_name()));
    check(j.contains("format") && j["format"] == kKvPlanFormat,
          std::string("not a KV plan: \"format\" must be \"") + kKvPlanFormat + "\", got " +
              (j.contains("format") ? j["format"].dump() : "nothing"));
    const json& version = member(j, "version", json::value_t::number_integer, "the plan", "an integer");
    check(version.get<int64_t>() == kKvPlanVersion, "unsupported plan version " + version.dump() +
                                                        " (this build reads version " +
                                                        std::to_string(kKvPlanVersion) + ")");
    KvPlanFile p;
    const json& m = member(j, "model", json::value_t::object, "the plan", "an object");
    p.model.file = string_of(m, "file", "\"model\"");
    p.model.name = string_of(m, "name", "\"model\"");
    p.model.fingerprint = string_of(m, "fingerprint", "\"model\"");
    check(!p.model.fingerprint.empty(), "\"fingerprint\" in \"model\" is empty");
    p.model.n_layers = positive_int(m, "n_layers", "\"model\"");
    p.model.n_kv_heads = positive_int(m, "n_kv_heads", "\"model\"");
    p.model.head_dim = positive_int(m, "head_dim", "\"model\"");
    const json& layers = member(j, "layers", json::value_t::array, "the plan", "an array");
    check(int64_t(layers.size()) == p.model.n_layers, "\"layers\" lists " + std::to_string(layers.size()) +
                                                          " layers but \"model\" has " +
                                                          std::to_string(p.model.n_layers));
    for (size_t l = 0; l < layers.size(); ++l) {
      check(layers[l].is_object(), "layers[" + std::to_string(l) + "] must be an object like {\"k\":\"int8\",\"v\":\"int4\"}");
      p.precision.layers.push_back({dtype_of(layers[l], "k", l), dtype_of(layers[l], "v", l)});
    }
    if (j.contains("k_smooth")) {  // optional: [n_layers][empty or n_kv_heads * head_dim] positive factors
      const json& ks = member(j, "k_smooth", json::value_t::array, "the plan", "an array");
      check(ks.empty() || int64_t(ks.size()) == p.model.n_layers,
            "\"k_smooth\" lists " + std::to_string(ks.size()) + " layers but \"model\" has " + std::to_string(p.model.n_layers));
      for (size_t l = 0; l < ks.size(); ++l) {
        const std::string where = "k_smooth[" + std::to_string(l) + "]";
        check(ks[l].is_array() && (ks[l].empty() || int64_t(ks[l].size()) == p.model.n_kv_heads * p.model.head_dim),
              where + " must be empty or n_kv_heads x head_dim = " + std::to_string(p.model.n_kv_heads * p.model.head_dim) +
                  " numbers");
        std::vector<float> f;
        for (const json& x : ks[l]) {
          check(x.is_number() && std::isfinite(x.get<double>()) && x.get<double>() > 0,
                where + ": factors must be positive numbers, got " + x.dump());
          f.push_back(x.get<float>());
        }
        p.precision.k_smooth.push_back(std::move(f));
      }
    }
    if (j.contains("calibration")) {
      check(j["calibration"].is_object(), "\"calibration\" must be an object");
      p.calibration = j["calibration"];
    }
    return p;
  } catch (const Error& e) {
    fail(origin + ": " + e.what());
  }
}

KvPlanFile read_kv_plan(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(bool(in), "cannot read KV plan '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_kv_plan(ss.str(), "KV plan '" + path + "'");
}

void write_kv_plan(const KvPlanFile& plan, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    check(bool(out), "cannot write '" + tmp + "'");
    out << kv_plan_json(plan).dump(1) << "\n";
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

void check_kv_plan_model(const KvPlanFile& plan, const ModelIdentity& model, const std::string& origin) {
  const ModelIdentity& p = plan.model;
  const bool same = p.fingerprint == model.fingerprint && p.n_layers == model.n_layers &&
                    p.n_kv_heads == model.n_kv_heads && p.head_dim == model.head_dim;
  check(same, origin + " was made for another model: " + describe(p) + ", not " + describe(model));
}

}  // namespace tinfer::cli

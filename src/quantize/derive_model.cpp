// Layer subsetting of a GGUF (see derive_model.h).
#include "quantize/derive_model.h"

#include <cstdlib>
#include <map>
#include <memory>

#include "tinfer/error.h"
#include "quantize/gguf_output.h"

namespace tinfer {

namespace {

int parse_index(const std::string& s, int n_layers, const std::string& spec) {
  check(!s.empty() && s.find_first_not_of("0123456789") == std::string::npos,
        "--keep-layers '" + spec + "': '" + s + "' is not a layer index");
  check(s.size() <= 6, "--keep-layers '" + spec + "': layer " + s + " is out of range (the model has " +
                           std::to_string(n_layers) + " layers: 0-" + std::to_string(n_layers - 1) + ")");
  const int v = std::atoi(s.c_str());
  check(v < n_layers, "--keep-layers '" + spec + "': layer " + s + " is out of range (the model has " +
                          std::to_string(n_layers) + " layers: 0-" + std::to_string(n_layers - 1) + ")");
  return v;
}

// "blk.<i>.<rest>": i and rest; false for any other name.
bool split_layer_name(const std::string& name, int& layer, std::string& rest) {
  if (name.rfind("blk.", 0) != 0) return false;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return false;
  const std::string idx = name.substr(4, dot - 4);
  if (idx.find_first_not_of("0123456789") != std::string::npos || idx.size() > 6) return false;
  layer = std::atoi(idx.c_str());
  rest = name.substr(dot);
  return true;
}

}  // namespace

std::vector<int> parse_layer_list(const std::string& spec, int n_layers) {
  check(n_layers >= 1, "the model has no layers");
  if (spec == "all") {
    std::vector<int> all(static_cast<size_t>(n_layers));
    for (int i = 0; i < n_layers; ++i) all[size_t(i)] = i;
    return all;
  }
  check(!spec.empty(), "--keep-layers: empty list");
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= spec.size()) {
    const size_t comma = spec.find(',', pos);
    const std::string item = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t dash = item.find('-');
    int lo, hi;
    if (dash == std::string::npos) {
      lo = hi = parse_index(item, n_layers, spec);
    } else {
      lo = parse_index(item.substr(0, dash), n_layers, spec);
      hi = parse_index(item.substr(dash + 1), n_layers, spec);
      check(lo <= hi, "--keep-layers '" + spec + "': range " + item + " is descending");
    }
    for (int i = lo; i <= hi; ++i) {
      check(out.empty() || i > out.back(), "--keep-layers '" + spec + "': layers must be ascending and distinct (" +
                                               std::to_string(i) + " comes after " +
                                               (out.empty() ? std::string() : std::to_string(out.back())) + ")");
      out.push_back(i);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::string format_layer_list(const std::vector<int>& layers) {
  std::string s;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(layers[i]);
    if (j > i) s += '-' + std::to_string(layers[j]);
    i = j + 1;
  }
  return s;
}

DeriveReport derive_model(const GgufFile& src, const std::vector<int>& keep, const std::string& out_path) {
  const auto arch = src.get_string("general.architecture");
  check(arch.has_value(), "derive: the model has no general.architecture");
  const std::string count_key = *arch + ".block_count";
  const auto n = src.get_int(count_key);
  check(n.has_value() && *n >= 1, "derive: the model has no " + count_key);
  DeriveReport rep;
  rep.src_layers = int(*n);
  check(!keep.empty(), "derive: no layers to keep");
  for (size_t i = 0; i < keep.size(); ++i)
    check(keep[i] >= 0 && keep[i] < rep.src_layers && (i == 0 || keep[i] > keep[i - 1]),
          "derive: layers to keep must be ascending, distinct and below " + std::to_string(rep.src_layers));
  rep.kept_layers = int(keep.size());
  std::map<int, int> new_index;  // source layer -> output layer
  for (size_t i = 0; i < keep.size(); ++i) new_index[keep[i]] = int(i);

  GgufWriter layout;
  for (const auto& [k, v] : src.metadata()) {
    if (k == count_key) {
      GgufValue c = v;
      if (std::holds_alternative<int64_t>(c.v)) c.v = int64_t(rep.kept_layers);
      else c.v = uint64_t(rep.kept_layers);
      layout.set(k, c);
    } else if (v.type == GgufType::ARRAY && k.rfind(*arch + ".", 0) == 0 &&
               std::get<std::shared_ptr<GgufArray>>(v.v)->values.size() == size_t(rep.src_layers)) {
      // A per-layer hyper-parameter (e.g. heads per layer): the kept layers' entries.
      const auto& in = *std::get<std::shared_ptr<GgufArray>>(v.v);
      auto sub = std::make_shared<GgufArray>();
      sub->elem_type = in.elem_type;
      for (int l : keep) sub->values.push_back(in.values[size_t(l)]);
      layout.set(k, GgufValue{GgufType::ARRAY, sub});
    } else {
      layout.set(k, v);
    }
  }
  layout.set_string("tinfer.derive.layers", format_layer_list(keep));
  layout.set_u32("tinfer.derive.source_block_count", uint32_t(rep.src_layers));

  std::vector<const GgufTensor*> kept;
  for (const GgufTensor& t : src.tensors()) {
    int layer = -1;
    std::string rest;
    std::string name = t.name;
    if (split_layer_name(t.name, layer, rest)) {
      check(layer < rep.src_layers, "derive: tensor " + t.name + " names a layer past " + count_key);
      const auto it = new_index.find(layer);
      if (it == new_index.end()) {
        ++rep.dropped_tensors;
        continue;
      }
      name = "blk." + std::to_string(it->second) + rest;
    }
    layout.declare_tensor(name, t.type, t.shape);
    kept.push_back(&t);
  }
  GgufOutputFile out(out_path, layout);
  for (const GgufTensor* t : kept) out.append(t->data, t->bytes);
  out.commit();
  rep.tensors = int64_t(kept.size());
  rep.bytes_out = out.total_bytes();
  return rep;
}

}  // namespace tinfer

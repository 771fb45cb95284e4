// safetensors reading and validation (see safetensors.h).
#include "formats/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tinfer/error.h"
#include "quant/type_table.h"

namespace tinfer {

using nlohmann::json;

namespace {

constexpr uint64_t kMaxHeader = uint64_t(100) << 20;  // as the reference implementation bounds it

struct SafeDtype {
  const char* name;
  DType type;
  size_t bytes;
};
constexpr SafeDtype kDtypes[] = {{"F32", DType::F32, 4}, {"F16", DType::F16, 2}, {"BF16", DType::BF16, 2}};

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.origin_ = path;
  f.map_ = MappedFile::open(path);
  f.parse(f.map_.data(), f.map_.size());
  return f;
}

SafetensorsFile SafetensorsFile::from_bytes(const uint8_t* data, size_t size, const std::string& origin) {
  SafetensorsFile f;
  f.origin_ = origin;
  f.owned_.assign(data, data + size);
  f.parse(f.owned_.data(), f.owned_.size());
  return f;
}

void SafetensorsFile::parse(const uint8_t* data, size_t size) {
  const std::string where = "safetensors file '" + origin_ + "'";
  check(size >= 8, where + ": " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  check(n <= kMaxHeader, where + ": header of " + std::to_string(n) + " bytes is over the 100 MiB limit");
  check(n <= size - 8, where + ": header of " + std::to_string(n) + " bytes is longer than the file (" +
                           std::to_string(size) + " bytes)");
  json h;
  try {
    h = json::parse(data + 8, data + 8 + n);
  } catch (const json::exception& e) {  // a syntax error, or a number out of range
    fail(where + ": header is not valid JSON: " + e.what());
  }
  check(h.is_object(), where + ": header is not a JSON object");
  const uint8_t* base = data + 8 + n;
  const uint64_t data_size = size - 8 - n;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [name, v] : h.items()) {
    if (name == "__metadata__") continue;
    const std::string t = where + ": tensor '" + name + "'";
    check(v.is_object() && v.contains("dtype") && v["dtype"].is_string() && v.contains("shape") &&
              v["shape"].is_array() && v.contains("data_offsets") && v["data_offsets"].is_array() &&
              v["data_offsets"].size() == 2,
          t + " needs \"dtype\", \"shape\" and two \"data_offsets\"");
    const std::string dt = v["dtype"].get<std::string>();
    const SafeDtype* d = nullptr;
    for (const SafeDtype& k : kDtypes)
      if (dt == k.name) d = &k;
    check(d != nullptr, t + " has dtype '" + dt + "' (readable: F32, F16, BF16)");
    uint64_t elems = 1;
    GgufTensor g;
    g.name = name;
    g.type = d->type;
    for (const json& s : v["shape"]) {
      check(s.is_number_unsigned() || (s.is_number_integer() && s.get<int64_t>() >= 0), t + ": shape entries must be non-negative integers");
      const uint64_t dim = s.get<uint64_t>();
      check(dim < (uint64_t(1) << 40) && (dim == 0 || elems <= (uint64_t(1) << 48) / dim), t + ": shape too large");
      elems *= dim;
      g.shape.insert(g.shape.begin(), int64_t(dim));  // reversed: GGUF order, row length first
    }
    for (const json& o : v["data_offsets"]) check(o.is_number_unsigned() || (o.is_number_integer() && o.get<int64_t>() >= 0), t + ": data_offsets must be non-negative integers");
    const uint64_t b = v["data_offsets"][0].get<uint64_t>(), e = v["data_offsets"][1].get<uint64_t>();
    check(b <= e && e <= data_size, t + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                                        ") outside the " + std::to_string(data_size) + " bytes of data (truncated file?)");
    check((8 + n + b) % d->bytes == 0, t + " starts at file byte " + std::to_string(8 + n + b) +
                                           ", not a multiple of its element size " + std::to_string(d->bytes));
    check(e - b == elems * d->bytes, t + " holds " + std::to_string(e - b) + " bytes, its dtype and shape need " +
                                         std::to_string(elems * d->bytes));
    g.offset = b;
    g.bytes = size_t(e - b);
    g.data = base + b;
    if (e > b) spans.push_back({b, e});  // an empty tensor occupies nothing
    tensors_.push_back(std::move(g));
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    check(spans[i].first >= spans[i - 1].second, where + ": tensors' data overlap at byte " + std::to_string(spans[i].first));
  std::sort(tensors_.begin(), tensors_.end(), [](const GgufTensor& a, const GgufTensor& b) { return a.offset < b.offset; });
}

const GgufTensor* SafetensorsFile::tensor(const std::string& name) const {
  for (const GgufTensor& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

SafetensorsCheckpoint SafetensorsCheckpoint::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  SafetensorsCheckpoint c;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (!fs::exists(index)) {
    const fs::path one = fs::path(dir) / "model.safetensors";
    check(fs::exists(one), "'" + dir + "' holds neither model.safetensors nor model.safetensors.index.json");
    c.shards_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open(one.string())));
    return c;
  }
  std::ifstream in(index, std::ios::binary);
  check(bool(in), "cannot read '" + index.string() + "'");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    fail("'" + index.string() + "' is not valid JSON: " + e.what());
  }
  check(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(),
        "'" + index.string() + "' has no \"weight_map\" object");
  std::map<std::string, size_t> shard_of_file;
  std::vector<std::pair<std::string, size_t>> wanted;
  for (const auto& [name, file] : j["weight_map"].items()) {
    check(file.is_string(), "'" + index.string() + "': the shard of '" + name + "' is not a string");
    const std::string f = file.get<std::string>();
    check(!f.empty() && f.find('/') == std::string::npos && f.find('\\') == std::string::npos && f != "." && f != "..",
          "'" + index.string() + "': shard '" + f + "' is not a file name in the checkpoint's directory");
    auto it = shard_of_file.find(f);
    if (it == shard_of_file.end()) {
      it = shard_of_file.emplace(f, c.shards_.size()).first;
      c.shards_.push_back(std::make_unique<SafetensorsFile>(SafetensorsFile::open((fs::path(dir) / f).string())));
    }
    wanted.push_back({name, it->second});
  }
  for (const auto& [name, shard] : wanted)
    check(c.shards_[shard]->tensor(name) != nullptr,
          "'" + index.string() + "' lists '" + name + "' in " + c.shards_[shard]->origin() + ", which does not hold it");
  return c;
}

const GgufTensor* SafetensorsCheckpoint::tensor(const std::string& name) const {
  for (const auto& s : shards_)
    if (const GgufTensor* t = s->tensor(name)) return t;
  return nullptr;
}

std::vector<const GgufTensor*> SafetensorsCheckpoint::tensors() const {
  std::vector<const GgufTensor*> out;
  for (const auto& s : shards_)
    for (const GgufTensor& t : s->tensors()) out.push_back(&t);
  return out;
}

}  // namespace tinfer

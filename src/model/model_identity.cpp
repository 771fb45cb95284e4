// Model identity and fingerprint (see model_identity.h).
#include "model/model_identity.h"

#include <bit>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tinfer/error.h"
#include "core/fnv1a.h"
#include "model/arch/arch.h"

namespace tinfer {

namespace {

void hash_value(Fnv1a64& h, const GgufValue& v) {
  h.u64(uint64_t(v.type));
  if (const auto* i = std::get_if<int64_t>(&v.v)) h.u64(uint64_t(*i));
  else if (const auto* u = std::get_if<uint64_t>(&v.v)) h.u64(*u);
  else if (const auto* d = std::get_if<double>(&v.v)) h.u64(std::bit_cast<uint64_t>(*d));
  else if (const auto* b = std::get_if<bool>(&v.v)) h.u64(*b ? 1 : 0);
  else if (const auto* s = std::get_if<std::string>(&v.v)) h.str(*s);
  else if (const auto* a = std::get_if<std::shared_ptr<GgufArray>>(&v.v)) {
    h.u64(uint64_t((*a)->elem_type));
    h.u64((*a)->values.size());
    for (const GgufValue& e : (*a)->values) hash_value(h, e);
  }
}

bool is_gguf(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  check(bool(f), "cannot open model file '" + path + "'");
  char magic[4] = {};
  f.read(magic, 4);
  return f.gcount() == 4 && std::string(magic, 4) == "GGUF";
}

ModelIdentity identity_of(const GgufFile& file, const ModelConfig& cfg, const std::string& path) {
  return ModelIdentity{std::filesystem::path(path).filename().string(), cfg.name, cfg.n_layers, cfg.n_kv_heads,
                       cfg.head_dim, gguf_fingerprint(file)};
}

}  // namespace

std::string gguf_fingerprint(const GgufFile& file) {
  constexpr size_t kSample = 256;
  Fnv1a64 h;
  h.u64(file.metadata().size());
  for (const auto& [key, value] : file.metadata()) h.str(key), hash_value(h, value);
  h.u64(file.tensors().size());
  for (const GgufTensor& t : file.tensors()) {
    h.str(t.name);
    h.u64(uint64_t(t.type));
    h.u64(t.shape.size());
    for (int64_t d : t.shape) h.u64(uint64_t(d));
    h.u64(t.bytes);
    const size_t n = std::min(kSample, t.bytes);
    if (t.data) h.bytes(t.data, n), h.bytes(t.data + t.bytes - n, n);
  }
  return "fnv1a64:" + h.hex();
}

ModelIdentity model_identity(const Model& model) {
  return identity_of(model.gguf(), model.config(), model.path());
}

ModelIdentity read_model_identity(const std::string& path, const ModelLoadOptions& opts) {
  check(std::filesystem::exists(path), "model file '" + path + "' does not exist");
  if (!is_gguf(path)) return model_identity(*Model::load(path, opts));
  const GgufFile file = GgufFile::open(path);
  const auto arch_name = file.get_string("general.architecture");
  check(arch_name.has_value(), path + ": missing metadata key 'general.architecture'");
  const ArchSpec* arch = find_arch(*arch_name);
  check(arch != nullptr, path + ": unknown architecture '" + *arch_name + "'");
  return identity_of(file, arch->read_config(file), path);
}

}  // namespace tinfer

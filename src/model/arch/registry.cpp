// The architecture registry: one line per architecture file, plus helpers those files share.
#include <algorithm>

#include "tinfer/error.h"
#include "model/arch/arch.h"
#include "formats/gguf.h"

namespace tinfer {

extern const ArchSpec kLlamaArch, kQwen2Arch, kQwen3Arch, kPhi3Arch, kGemma3Arch;

namespace {
const ArchSpec* const kArchs[] = {
    &kLlamaArch,
    &kQwen2Arch,
    &kQwen3Arch,
    &kPhi3Arch,
    &kGemma3Arch,
};

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}
}  // namespace

const ArchSpec* find_arch(const std::string& name) {
  for (const ArchSpec* a : kArchs)
    if (name == a->name) return a;
  return nullptr;
}

std::vector<std::string> known_archs() {
  std::vector<std::string> out;
  for (const ArchSpec* a : kArchs) out.push_back(a->name);
  return out;
}

std::string arch_names_where(bool (*pred)(const ArchFacts&)) {
  std::vector<std::string> names;
  for (const ArchSpec* a : kArchs)
    if (pred(a->facts)) names.push_back(a->name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

const GgufTensor& require_tensor(const GgufFile& file, const std::string& name, std::vector<int64_t> shape) {
  const GgufTensor* t = file.tensor(name);
  check(t != nullptr, "missing tensor '" + name + "'");
  check(t->shape == shape,
        "tensor '" + name + "' has shape " + shape_str(t->shape) + ", expected " + shape_str(shape));
  return *t;
}

int64_t require_int(const GgufFile& file, const std::string& key) {
  auto v = file.get_int(key);
  check(v.has_value(), "missing metadata key '" + key + "'");
  return *v;
}

}  // namespace tinfer

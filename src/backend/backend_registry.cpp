// The backend registry: one line per device. A backend that is not compiled in is simply not listed.

#include "tinfer/error.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_forward.h"

namespace tinfer {

namespace {

using Factory = std::unique_ptr<Backend> (*)(const Model&, const BackendOptions&);

struct Entry {
  const char* name;
  Factory create;
};

const Entry kBackends[] = {
    {"cpu", [](const Model& m, const BackendOptions& o) -> std::unique_ptr<Backend> { return make_cpu_backend(m, o); }},
};

}  // namespace

std::unique_ptr<Backend> create_backend(std::string_view name, const Model& model, const BackendOptions& opts) {
  for (const Entry& e : kBackends) {
    if (name != e.name) continue;
    std::unique_ptr<Backend> b = e.create(model, opts);
    if (!opts.skip.empty()) b->require(BackendCapability::kLayerSkip, "a layer-skip plan");
    if (opts.early_exit.enabled()) b->require(BackendCapability::kEarlyExit, "early exit");
    return b;
  }
  std::string known;
  for (const Entry& e : kBackends) known += std::string(known.empty() ? "" : ", ") + e.name;
  fail("unknown backend '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<std::string> backend_names() {
  std::vector<std::string> out;
  for (const Entry& e : kBackends) out.emplace_back(e.name);
  return out;
}

}  // namespace tinfer

// Backend's capability defaults: the answers of a backend with none (see backend.h). The registry is
// backend_registry.cpp.
#include <string>

#include "tinfer/error.h"
#include "backend/backend.h"

namespace tinfer {

namespace {

// The words of each capability in the errors, one row per capability.
struct CapabilityRow {
  BackendCapability cap;
  const char* name;
};
constexpr CapabilityRow kCapabilities[] = {
    {BackendCapability::kLayerSkip, "layer skip"},
    {BackendCapability::kEarlyExit, "early exit"},
    {BackendCapability::kActivationObserver, "the activation observer"},
    {BackendCapability::kPartialDepth, "partial depth (ForwardBatch::n_layers)"},
};

}  // namespace

const char* capability_name(BackendCapability cap) {
  for (const CapabilityRow& r : kCapabilities)
    if (r.cap == cap) return r.name;
  return "an unknown capability";
}

void Backend::require(BackendCapability cap, std::string_view who) const {
  if (supports(cap)) return;
  std::string msg = "backend '" + std::string(name()) + "' does not support " + capability_name(cap);
  if (!who.empty()) msg += " (needed by " + std::string(who) + ")";
  fail(msg);
}

void Backend::set_linear_observer(LinearObserver) {
  require(BackendCapability::kActivationObserver, "set_linear_observer");
}

void Backend::set_layer_skip(LayerSkip) { require(BackendCapability::kLayerSkip, "set_layer_skip"); }

const LayerSkip& Backend::layer_skip() const {
  static const LayerSkip none;  // nothing skipped
  return none;
}

void Backend::set_early_exit(EarlyExit) { require(BackendCapability::kEarlyExit, "set_early_exit"); }

const EarlyExit& Backend::early_exit() const {
  static const EarlyExit off;  // EarlyExit{}: off
  return off;
}

size_t Backend::layer_bytes(int64_t) const {
  require(BackendCapability::kEarlyExit, "layer_bytes");
  return 0;
}

size_t Backend::qkv_bytes(int64_t) const {
  require(BackendCapability::kEarlyExit, "qkv_bytes");
  return 0;
}

size_t Backend::head_bytes() const {
  require(BackendCapability::kEarlyExit, "head_bytes");
  return 0;
}

}  // namespace tinfer

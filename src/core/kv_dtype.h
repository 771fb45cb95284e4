// KvDtype: the element type of the KV cache, a plain enum the public engine API, the planner, the
// storage and the attention kernels all use. fp16 halves the bytes per token (capacity x2, decode
// attention reads half) at a rounding of K and V to 11 significant bits.
#pragma once
#include <string_view>

namespace tinfer {

enum class KvDtype { f32, f16 };

inline int kv_dtype_bytes(KvDtype t) { return t == KvDtype::f16 ? 2 : 4; }
inline const char* kv_dtype_name(KvDtype t) { return t == KvDtype::f16 ? "f16" : "f32"; }
// "f32" | "f16"; false for anything else.
inline bool parse_kv_dtype(std::string_view s, KvDtype* out) {
  if (s == "f32") return *out = KvDtype::f32, true;
  if (s == "f16") return *out = KvDtype::f16, true;
  return false;
}

}  // namespace tinfer

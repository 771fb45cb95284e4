// KvDtype: the element type of the KV cache, a plain enum the public engine API, the planner, the
// storage and the attention kernels all use, with its facts in one table (kv_dtype_info).
//   f32   4 bytes per value.
//   f16   2 bytes per value: capacity x2, decode attention reads half, K and V rounded to 11 significant bits.
//   int8  1 byte per value + an fp16 scale per (token, kv head): x = scale * code, code in [-127, 127].
//   int4  half a byte per value + an fp16 scale and an fp16 min per (token, kv head): x = min + scale * code,
//         code in [0, 15] (the min is the zero point in value units: zero point = -min / scale).
// The quantized types are written by KvStorage (backend/cpu/kv_storage.h) through kernels/kv_quant.h and read by
// the paged attention kernels, which dequantize on load.
#pragma once
#include <cstdint>
#include <string_view>

namespace tinfer {

enum class KvDtype { f32, f16, int8, int4 };

struct KvDtypeInfo {
  KvDtype type;
  const char* name;
  int value_bits;   // bits per stored value (code)
  int scale_bytes;  // bytes of scale data per (token, kv head): 0, or fp16 scale (+ fp16 min for int4)
};

inline constexpr KvDtypeInfo kKvDtypes[] = {
    {KvDtype::f32, "f32", 32, 0},
    {KvDtype::f16, "f16", 16, 0},
    {KvDtype::int8, "int8", 8, 2},
    {KvDtype::int4, "int4", 4, 4},
};

constexpr const KvDtypeInfo& kv_dtype_info(KvDtype t) { return kKvDtypes[int(t)]; }
constexpr const char* kv_dtype_name(KvDtype t) { return kv_dtype_info(t).name; }
constexpr bool kv_dtype_quantized(KvDtype t) { return kv_dtype_info(t).scale_bytes > 0; }
// Bytes of n consecutive values (codes): int4 packs two per byte (an odd count rounds up).
constexpr int64_t kv_code_bytes(KvDtype t, int64_t n) { return (n * kv_dtype_info(t).value_bits + 7) / 8; }
// Bytes one token of one kv head takes in this type: head_dim values and their scales.
constexpr int64_t kv_head_bytes(KvDtype t, int64_t head_dim) {
  return kv_code_bytes(t, head_dim) + kv_dtype_info(t).scale_bytes;
}
// "f32" | "f16" | "int8" | "int4"; false for anything else.
inline bool parse_kv_dtype(std::string_view s, KvDtype* out) {
  for (const KvDtypeInfo& i : kKvDtypes)
    if (s == i.name) return *out = i.type, true;
  return false;
}
// For messages: "f32|f16|int8|int4".
inline constexpr const char* kKvDtypeNames = "f32|f16|int8|int4";

}  // namespace tinfer

// Internal facts of the GGUF container shared by the reader and writer: magic, limits, the
// metadata value-type table (names and scalar sizes).
#pragma once
#include <cstddef>
#include <cstdint>

#include "formats/gguf.h"

namespace tinfer::gguf {

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint32_t kVersion = 3;          // what the writer emits
constexpr size_t kDefaultAlignment = 32;  // used when general.alignment is absent
constexpr size_t kMaxAlignment = size_t{1} << 20;
constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
constexpr uint64_t kMaxKeyLen = 65535;   // spec: keys are at most 2^16-1 bytes
constexpr uint64_t kMaxTensorName = 64;  // spec: tensor names are at most 64 bytes
constexpr int kMaxArrayDepth = 4;        // arrays of arrays: bounded so recursion is bounded
// Total array elements in one file's metadata. Real vocabularies need ~1M (256k tokens x
// tokens/scores/types + merges); the cap bounds memory for hostile files (~48 bytes per value).
constexpr uint64_t kMaxMetadataValues = uint64_t{1} << 23;

// Smallest possible encodings, used to reject impossible counts before allocating.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                  // key length, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // name length, n_dims, 1 dim, type, offset

inline bool valid_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::FLOAT64); }

// Bytes of one scalar value; 0 for STRING and ARRAY (variable length).
inline size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::BOOL:
      return 1;
    case GgufType::UINT16:
    case GgufType::INT16:
      return 2;
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::FLOAT32:
      return 4;
    case GgufType::UINT64:
    case GgufType::INT64:
    case GgufType::FLOAT64:
      return 8;
    default:
      return 0;
  }
}

// Smallest encoding of one array element of type t (a string is at least its length field).
inline uint64_t min_elem_size(GgufType t) {
  if (t == GgufType::STRING) return 8;
  if (t == GgufType::ARRAY) return 4 + 8;
  return scalar_size(t);
}

inline const char* type_name(GgufType t) {
  static const char* const kNames[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                       "bool",  "string", "array",  "uint64", "int64",  "float64"};
  auto i = static_cast<uint32_t>(t);
  return valid_type(i) ? kNames[i] : "unknown";
}

inline bool is_integer(GgufType t) {
  switch (t) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::UINT16:
    case GgufType::INT16:
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::UINT64:
    case GgufType::INT64:
      return true;
    default:
      return false;
  }
}
inline bool is_float(GgufType t) { return t == GgufType::FLOAT32 || t == GgufType::FLOAT64; }

}  // namespace tinfer::gguf

// The type table: every tensor element type is one row of facts plus reference (de)quantizers.
// The reference functions are scalar and are the test oracles for every optimised kernel.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "quant/dtype.h"

namespace tinfer {

struct TypeTraits {
  DType type;
  const char* name;       // "f32", "q8_0", ... (lower case, as on the command line)
  int64_t block_size;     // elements per block (1 for plain float types)
  size_t block_bytes;     // bytes per block
  // Reference dequantize: n elements (n % block_size == 0) from `src` to floats.
  void (*to_float)(const void* src, float* dst, int64_t n);
  // Reference quantize (bit-exact with ggml's *_ref quantizers): n floats to blocks.
  void (*from_float)(const float* src, void* dst, int64_t n);
};

// The row for `t`, or nullptr if the type is not supported.
const TypeTraits* find_type(DType t);
// The row for `t`; throws Error naming the type id if unsupported.
const TypeTraits& type_traits(DType t);
// The row whose name is `name` ("q8_0", "f16", ...), or nullptr.
const TypeTraits* find_type(const std::string& name);

// Bytes of a row of n elements; throws Error if n is not a multiple of the block size.
size_t row_bytes(DType t, int64_t n);

}  // namespace tinfer

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

  // --- The code grid, for `tinfer quantize` (GPTQ / AWQ / importance-weighted RTN). Quantized types only;
  // the float types leave these empty (code_min == code_max == 0, null functions). ---
  // Element i of a block holds an integer code q in [code_min, code_max] (the raw stored integer, e.g.
  // 0..15 for Q4_0) and dequantizes to scale[i] * q + offset[i], scale/offset fixed by the block's scales.
  int code_min = 0;
  int code_max = 0;
  // Importance-weighted quantize: the scale search minimises sum_i importance[i] * (x_i - deq_i)^2
  // (importance: n values >= 0, e.g. per-column activation energy; nullptr = plain squared error).
  // The output is an ordinary block of the type; not bit-exact with ggml (from_float is the bit-exact one).
  // Per block it is never worse in that weighted error than from_float's block (which it falls back to).
  void (*from_float_weighted)(const float* src, void* dst, int64_t n, const float* importance) = nullptr;
  // The grid of n elements (whole blocks): per element its scale and offset (to_float(x)[i] ==
  // scale[i] * code[i] + offset[i] up to float rounding).
  void (*grid)(const void* blocks, float* scale, float* offset, int64_t n) = nullptr;
  // The codes of n elements (whole blocks), each in [code_min, code_max].
  void (*get_codes)(const void* blocks, int32_t* q, int64_t n) = nullptr;
  // Rewrites the codes of n elements (whole blocks), keeping every block's scales and mins (codes outside
  // [code_min, code_max] are clamped to it).
  void (*set_codes)(void* blocks, const int32_t* q, int64_t n) = nullptr;
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

// Tensor element types. Numeric values are the GGUF/ggml type ids (they are stored in files).
#pragma once
#include <cstdint>

namespace tinfer {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  BF16 = 30,
};

}  // namespace tinfer

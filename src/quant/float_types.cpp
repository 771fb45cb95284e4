// Reference conversions for the plain float types: f32 (copy), f16 and bf16 (round to nearest even).
#include <cstring>

#include "core/fp16.h"
#include "quant/ref_quants.h"

namespace tinfer::quant_ref {

void f32_to_float(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
void f32_from_float(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }

// uint16 elements are read/written with memcpy: GGUF tensor data is only guaranteed byte-aligned.
void f16_to_float(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    dst[i] = fp16_to_f32(h);
  }
}
void f16_from_float(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_fp16(src[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

void bf16_to_float(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, p + 2 * i, 2);
    dst[i] = bf16_to_f32(b);
  }
}
void bf16_from_float(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = f32_to_bf16(src[i]);
    std::memcpy(p + 2 * i, &b, 2);
  }
}

}  // namespace tinfer::quant_ref

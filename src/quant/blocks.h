// Block layouts, byte-compatible with the GGUF spec / ggml. Each block covers `kBlock*` elements
// of one row; `d`/`m` are IEEE fp16 bit patterns.
#pragma once
#include <cstdint>

namespace tinfer {

constexpr int kQK = 32;    // elements per block of the 32-wide formats (Q8_0, Q4_0, Q4_1)
constexpr int kQK_K = 256; // elements per super-block of the K-quants

struct BlockQ8_0 {  // x = d * q
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ4_0 {  // x = d * (q - 8); qs[j] low nibble = element j, high nibble = element j+16
  uint16_t d;
  uint8_t qs[kQK / 2];
};
struct BlockQ4_1 {  // x = d * q + m; nibble order as Q4_0
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {  // x = d * (q - 16); q = low nibble (qs, Q4_0 order) | bit j of qh << 4 for element j
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {  // x = d * q + m; q as Q5_0
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ2_K {  // 16 sub-blocks of 16: x = d*(sc&15)*q - dmin*(sc>>4), q 2 bits
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
struct BlockQ3_K {  // 16 sub-blocks of 16: x = d * (sc - 32) * (q - 4), q = 2 low bits (qs) + high bit (hmask), sc 6 bits
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
struct BlockQ4_K {  // 8 sub-blocks of 32: x = d*sc*q - dmin*mn, 6-bit sc/mn packed in `scales`
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {  // as Q4_K with 5-bit q: 4 low bits in qs, the fifth in qh
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {  // 16 sub-blocks of 16: x = d * sc * (q - 32), q = 4 low bits (ql) + 2 high bits (qh)
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

}  // namespace tinfer

// ActQuant: how the int8 GEMMs quantize activations. block32 (default): one scale per 32-element block
// (d = amax / 127 of the block); token: one scale per row (token) for all its blocks, the W8A8
// per-token scheme (one amax pass over the row; coarser where a row has outliers).
#pragma once
#include <cstdint>
#include <string_view>

namespace tinfer {

enum class ActQuant : uint8_t { block32, token };

inline const char* act_quant_name(ActQuant a) { return a == ActQuant::token ? "token" : "block32"; }
// "block32" | "token"; false for anything else.
inline bool parse_act_quant(std::string_view s, ActQuant* out) {
  if (s == "block32") return *out = ActQuant::block32, true;
  if (s == "token") return *out = ActQuant::token, true;
  return false;
}

}  // namespace tinfer

// Default block hash: FNV-1a over little-endian bytes, then a splitmix64 finaliser to spread the bits.
#include "kvcache/block_hash.h"

namespace tinfer::kv {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t mix_bytes(uint64_t h, uint64_t v, int nbytes) {
  for (int i = 0; i < nbytes; ++i) {
    h ^= (v >> (8 * i)) & 0xffu;
    h *= kFnvPrime;
  }
  return h;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

BlockHash default_block_hash(BlockHash parent, std::span<const Token> tokens, uint64_t extra_key) {
  uint64_t h = kFnvOffset;
  h = mix_bytes(h, parent, 8);
  h = mix_bytes(h, extra_key, 8);
  h = mix_bytes(h, tokens.size(), 4);
  for (Token t : tokens) h = mix_bytes(h, static_cast<uint32_t>(t), 4);
  return splitmix64(h);
}

}  // namespace tinfer::kv

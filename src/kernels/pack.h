// Packing several GGUF tensors that share a type and a row length into one packed matrix (their rows
// stacked, as a fused q|k|v or gate|up projection reads them), the tiles shared out over a thread pool.
#pragma once
#include <cstdint>
#include <span>

#include "kernels/kernels.h"

namespace tinfer {

// One source tensor: `rows` GGUF-layout rows of the matrix's type and column count.
struct PackPart {
  const void* data = nullptr;
  int64_t rows = 0;
};

// The parts' rows in order, packed as pack_matrix packs one tensor (the same bytes whatever the pool or
// the part boundaries). pool == nullptr packs on the calling thread. Throws Error if unsupported.
PackedMatrix pack_matrix(DType type, std::span<const PackPart> parts, int64_t cols, ThreadPool* pool);

}  // namespace tinfer

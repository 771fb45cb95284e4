// Hugging Face safetensors checkpoints, memory-mapped like GGUF: one `model.safetensors`, or shards listed by
// `model.safetensors.index.json` (its "weight_map": tensor name -> shard file in the same directory). A file is
// 8 bytes of little-endian header length N, N bytes of JSON ({"name": {"dtype", "shape", "data_offsets": [b, e]}},
// plus an optional "__metadata__"), then the data; offsets are relative to the data's start. Tensors come out as
// GgufTensor views (shape reversed into GGUF order: shape[0] is the row length) so the architecture binders and the
// forward passes read either format. F32, F16 and BF16 are read; anything else, and every inconsistency (a header
// longer than the file, offsets outside the data or overlapping, a byte count that disagrees with dtype x shape,
// malformed JSON), is an Error naming the file and the tensor.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "formats/mapped_file.h"

namespace tinfer {

class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);
  // Validates an in-memory image (copied), named `origin` in messages (tests, fuzzing).
  static SafetensorsFile from_bytes(const uint8_t* data, size_t size, const std::string& origin);
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* tensor(const std::string& name) const;
  const std::string& origin() const { return origin_; }

 private:
  void parse(const uint8_t* data, size_t size);
  std::string origin_;
  MappedFile map_;
  std::vector<uint8_t> owned_;
  std::vector<GgufTensor> tensors_;
};

// A checkpoint directory: its one file or its shards.
class SafetensorsCheckpoint {
 public:
  // dir/model.safetensors.index.json when present (every listed tensor must be in its shard), else
  // dir/model.safetensors. Error naming what is missing.
  static SafetensorsCheckpoint open_dir(const std::string& dir);
  const GgufTensor* tensor(const std::string& name) const;  // nullptr if absent
  std::vector<const GgufTensor*> tensors() const;            // every tensor of every shard
  size_t shard_count() const { return shards_.size(); }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
};

}  // namespace tinfer

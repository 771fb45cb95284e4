// GGUF (v2, v3) reader and writer. The reader memory-maps the file and validates the header,
// metadata and tensor table once, at open: every count, string length, offset and tensor extent
// is bounds-checked against the file size, so a malformed file gives a clear Error, never a crash
// or a huge allocation.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "quant/dtype.h"

namespace tinfer {

// GGUF metadata value types (ids as in the file format).
enum class GgufType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

struct GgufArray;
// A metadata value: integers widen to int64/uint64, floats to double.
struct GgufValue {
  GgufType type = GgufType::UINT32;
  std::variant<int64_t, uint64_t, double, bool, std::string, std::shared_ptr<GgufArray>> v;
};
struct GgufArray {
  GgufType elem_type = GgufType::UINT32;
  std::vector<GgufValue> values;  // strings and numbers alike (token lists are ~50k entries: fine)
};

struct GgufTensor {
  std::string name;
  DType type = DType::F32;
  std::vector<int64_t> shape;  // ne[0] first: shape[0] is the row length (fastest-varying)
  uint64_t offset = 0;         // relative to the start of the data section
  size_t bytes = 0;
  const uint8_t* data = nullptr;  // points into the mapping
  int64_t elements() const;
};

class GgufFile {
 public:
  // Maps and validates `path`. Throws Error (message names the file and the problem).
  static GgufFile open(const std::string& path);
  // Validates an in-memory image (copied); used by tests and the fuzzer.
  static GgufFile from_bytes(const uint8_t* data, size_t size);
  // A view assembled in memory (a Hugging Face checkpoint read as GGUF, model/hf/hf_checkpoint.h): metadata and
  // tensors whose data points into `backing` (mappings and the few materialised tensors), which the file keeps
  // alive. Error on duplicate keys or tensor names, or a tensor whose byte count disagrees with its type and shape.
  static GgufFile from_view(const std::string& name, std::vector<std::pair<std::string, GgufValue>> kv,
                            std::vector<GgufTensor> tensors, std::shared_ptr<const void> backing);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  uint32_t version() const;
  size_t alignment() const;
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const;
  const GgufValue* find(const std::string& key) const;
  // Typed getters: nullopt if absent; Error if present with an incompatible type.
  std::optional<int64_t> get_int(const std::string& key) const;
  std::optional<double> get_float(const std::string& key) const;
  std::optional<bool> get_bool(const std::string& key) const;
  std::optional<std::string> get_string(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;  // empty if absent
  std::vector<double> get_float_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;

  const std::vector<GgufTensor>& tensors() const;
  const GgufTensor* tensor(const std::string& name) const;  // nullptr if absent

 private:
  struct Impl;
  explicit GgufFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Builds a GGUF v3 file in memory and writes it. Used by `tinfer synth` and tests. For files too large to
// hold in memory (`tinfer quantize`), tensors can be declared without data and streamed: write
// header_bytes(), then each tensor's tensor_bytes(i) bytes in declaration order, each followed by zero
// padding to alignment().
class GgufWriter {
 public:
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_string(const std::string& key, const std::string& v);
  void set_string_array(const std::string& key, const std::vector<std::string>& v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
  // Any value, including the types without a typed setter (u8, i64, f64, nested arrays, ...).
  // Setting an existing key replaces its value in place.
  void set(const std::string& key, GgufValue v);
  // shape[0] is the row length; data holds row_bytes(type, shape[0]) * (product of the rest) bytes.
  void add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape, const void* data,
                  size_t bytes);
  // A tensor without its data (streaming): the same checks as add_tensor; to_bytes()/write() refuse a
  // writer holding declared-only tensors.
  void declare_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape);
  // Data alignment is general.alignment when set (a power of two), else 32.
  size_t alignment() const;
  size_t tensor_count() const { return tensors_.size(); }
  size_t tensor_bytes(size_t i) const { return tensors_.at(i).bytes; }  // unpadded
  // Header, metadata, tensor table and the padding before the data section.
  std::vector<uint8_t> header_bytes() const;
  std::vector<uint8_t> to_bytes() const;
  void write(const std::string& path) const;  // throws Error on I/O failure

 private:
  std::vector<std::pair<std::string, GgufValue>> kv_;
  struct PendingTensor {
    std::string name;
    DType type;
    std::vector<int64_t> shape;
    size_t bytes = 0;
    std::vector<uint8_t> data;  // empty for a declared-only tensor
  };
  size_t checked_bytes(const std::string& name, DType type, const std::vector<int64_t>& shape) const;
  std::vector<PendingTensor> tensors_;
};

}  // namespace tinfer

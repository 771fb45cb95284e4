// GGUF v3 writer: collects metadata and tensors in memory, then lays out header, metadata,
// tensor table and 32-byte-aligned data section (zero padding) in one buffer.
#include <cstring>
#include <fstream>
#include <unordered_set>

#include "tinfer/error.h"
#include "formats/gguf.h"
#include "formats/gguf_format.h"
#include "quant/type_table.h"

namespace tinfer {

namespace {

class Out {
 public:
  explicit Out(std::vector<uint8_t>& b) : b_(b) {}
  template <class T>
  void put(T v) {
    size_t n = b_.size();
    b_.resize(n + sizeof(T));
    std::memcpy(b_.data() + n, &v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
  }
  void put_value(const GgufValue& v, int depth) {
    using gguf::type_name;
    auto mismatch = [&] {
      fail(std::string("GgufWriter: value of type ") + type_name(v.type) + " holds the wrong C++ type");
    };
    switch (v.type) {
      case GgufType::UINT8:
      case GgufType::UINT16:
      case GgufType::UINT32:
      case GgufType::UINT64: {
        const uint64_t* u = std::get_if<uint64_t>(&v.v);
        if (!u) mismatch();
        if (v.type == GgufType::UINT8) put<uint8_t>(uint8_t(*u));
        if (v.type == GgufType::UINT16) put<uint16_t>(uint16_t(*u));
        if (v.type == GgufType::UINT32) put<uint32_t>(uint32_t(*u));
        if (v.type == GgufType::UINT64) put<uint64_t>(*u);
        break;
      }
      case GgufType::INT8:
      case GgufType::INT16:
      case GgufType::INT32:
      case GgufType::INT64: {
        const int64_t* i = std::get_if<int64_t>(&v.v);
        if (!i) mismatch();
        if (v.type == GgufType::INT8) put<int8_t>(int8_t(*i));
        if (v.type == GgufType::INT16) put<int16_t>(int16_t(*i));
        if (v.type == GgufType::INT32) put<int32_t>(int32_t(*i));
        if (v.type == GgufType::INT64) put<int64_t>(*i);
        break;
      }
      case GgufType::FLOAT32:
      case GgufType::FLOAT64: {
        const double* d = std::get_if<double>(&v.v);
        if (!d) mismatch();
        if (v.type == GgufType::FLOAT32)
          put<float>(float(*d));
        else
          put<double>(*d);
        break;
      }
      case GgufType::BOOL: {
        const bool* b = std::get_if<bool>(&v.v);
        if (!b) mismatch();
        put<uint8_t>(*b ? 1 : 0);
        break;
      }
      case GgufType::STRING: {
        const std::string* s = std::get_if<std::string>(&v.v);
        if (!s) mismatch();
        put_string(*s);
        break;
      }
      case GgufType::ARRAY: {
        const auto* a = std::get_if<std::shared_ptr<GgufArray>>(&v.v);
        if (!a || !*a) mismatch();
        if (depth >= gguf::kMaxArrayDepth) fail("GgufWriter: arrays nested too deeply");
        put<uint32_t>(static_cast<uint32_t>((*a)->elem_type));
        put<uint64_t>((*a)->values.size());
        for (const GgufValue& e : (*a)->values) {
          if (e.type != (*a)->elem_type) fail("GgufWriter: array element type differs from the array's type");
          put_value(e, depth + 1);
        }
        break;
      }
      default:
        fail("GgufWriter: unknown value type " + std::to_string(static_cast<uint32_t>(v.type)));
    }
  }
  void pad_to(size_t alignment) { b_.resize((b_.size() + alignment - 1) / alignment * alignment, 0); }

 private:
  std::vector<uint8_t>& b_;
};

GgufValue scalar(GgufType t, std::variant<int64_t, uint64_t, double, bool, std::string, std::shared_ptr<GgufArray>> v) {
  GgufValue out;
  out.type = t;
  out.v = std::move(v);
  return out;
}

template <class T, class Conv>
GgufValue array_of(GgufType elem, const std::vector<T>& xs, Conv conv) {
  auto a = std::make_shared<GgufArray>();
  a->elem_type = elem;
  a->values.reserve(xs.size());
  for (const T& x : xs) a->values.push_back(scalar(elem, conv(x)));
  return scalar(GgufType::ARRAY, std::move(a));
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue v) {
  if (key.size() > gguf::kMaxKeyLen) fail("GgufWriter: key longer than 65535 bytes");
  for (auto& [k, old] : kv_)
    if (k == key) {
      old = std::move(v);
      return;
    }
  kv_.emplace_back(key, std::move(v));
}

void GgufWriter::set_u32(const std::string& key, uint32_t v) { set(key, scalar(GgufType::UINT32, uint64_t{v})); }
void GgufWriter::set_i32(const std::string& key, int32_t v) { set(key, scalar(GgufType::INT32, int64_t{v})); }
void GgufWriter::set_u64(const std::string& key, uint64_t v) { set(key, scalar(GgufType::UINT64, v)); }
void GgufWriter::set_f32(const std::string& key, float v) { set(key, scalar(GgufType::FLOAT32, double{v})); }
void GgufWriter::set_bool(const std::string& key, bool v) { set(key, scalar(GgufType::BOOL, v)); }
void GgufWriter::set_string(const std::string& key, const std::string& v) { set(key, scalar(GgufType::STRING, v)); }
void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
  set(key, array_of(GgufType::STRING, v, [](const std::string& s) { return s; }));
}
void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  set(key, array_of(GgufType::FLOAT32, v, [](float x) { return double{x}; }));
}
void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  set(key, array_of(GgufType::INT32, v, [](int32_t x) { return int64_t{x}; }));
}

size_t GgufWriter::checked_bytes(const std::string& name, DType type, const std::vector<int64_t>& shape) const {
  const std::string tn = "GgufWriter: tensor '" + name + "'";
  check(!name.empty() && name.size() <= gguf::kMaxTensorName, tn + ": name must be 1..64 bytes");
  for (const PendingTensor& t : tensors_) check(t.name != name, tn + " added twice");
  check(!shape.empty() && shape.size() <= gguf::kMaxDims, tn + ": needs 1..4 dimensions");
  int64_t rows = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    check(shape[i] >= 1, tn + ": dimensions must be >= 1");
    if (i > 0) check(!__builtin_mul_overflow(rows, shape[i], &rows), tn + ": size overflows");
  }
  size_t expect = 0;
  check(!__builtin_mul_overflow(row_bytes(type, shape[0]), size_t(rows), &expect), tn + ": size overflows");
  return expect;
}

void GgufWriter::add_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape, const void* data,
                            size_t bytes) {
  const size_t expect = checked_bytes(name, type, shape);
  check(bytes == expect, "GgufWriter: tensor '" + name + "': got " + std::to_string(bytes) + " bytes, shape needs " +
                             std::to_string(expect));
  const auto* p = static_cast<const uint8_t*>(data);
  tensors_.push_back(PendingTensor{name, type, shape, bytes, std::vector<uint8_t>(p, p + bytes)});
}

void GgufWriter::declare_tensor(const std::string& name, DType type, const std::vector<int64_t>& shape) {
  const size_t bytes = checked_bytes(name, type, shape);
  tensors_.push_back(PendingTensor{name, type, shape, bytes, {}});
}

size_t GgufWriter::alignment() const {
  size_t align = gguf::kDefaultAlignment;
  for (const auto& [k, v] : kv_)
    if (k == "general.alignment") {
      const uint64_t* a = std::get_if<uint64_t>(&v.v);
      check(a && *a > 0 && (*a & (*a - 1)) == 0 && *a <= gguf::kMaxAlignment,
            "GgufWriter: general.alignment must be an unsigned power of two");
      align = size_t(*a);
    }
  return align;
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
  const size_t align = alignment();
  // Starts with the magic (constructed, not inserted: GCC 12 misreads an insert into an empty
  // vector as an overflow under -Werror=stringop-overflow).
  std::vector<uint8_t> buf(gguf::kMagic, gguf::kMagic + 4);
  Out out(buf);
  out.put<uint32_t>(gguf::kVersion);
  out.put<uint64_t>(tensors_.size());
  out.put<uint64_t>(kv_.size());
  for (const auto& [k, v] : kv_) {
    out.put_string(k);
    out.put<uint32_t>(static_cast<uint32_t>(v.type));
    out.put_value(v, 0);
  }
  uint64_t offset = 0;  // relative to the data section; each tensor starts aligned
  for (const PendingTensor& t : tensors_) {
    out.put_string(t.name);
    out.put<uint32_t>(uint32_t(t.shape.size()));
    for (int64_t d : t.shape) out.put<uint64_t>(uint64_t(d));
    out.put<uint32_t>(static_cast<uint32_t>(t.type));
    out.put<uint64_t>(offset);
    offset += (t.bytes + align - 1) / align * align;
  }
  out.pad_to(align);
  return buf;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  for (const PendingTensor& t : tensors_)
    check(t.data.size() == t.bytes, "GgufWriter: tensor '" + t.name + "' was declared without data");
  const size_t align = alignment();
  std::vector<uint8_t> buf = header_bytes();
  Out out(buf);
  for (const PendingTensor& t : tensors_) {
    buf.insert(buf.end(), t.data.begin(), t.data.end());
    out.pad_to(align);
  }
  return buf;
}

void GgufWriter::write(const std::string& path) const {
  std::vector<uint8_t> bytes = to_bytes();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail("cannot create '" + path + "'");
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  f.flush();
  if (!f) fail("write to '" + path + "' failed");
}

}  // namespace tinfer

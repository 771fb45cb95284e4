// GGUF reader: parses and validates the header, metadata and tensor table once, at open, against
// the file size; afterwards every accessor is a plain lookup. Tensor data stays in the mapping.
// v2 and v3 share one layout (64-bit counts); v3 only added big-endian files, which we reject.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <utility>

#include "tinfer/error.h"
#include "formats/gguf.h"
#include "formats/gguf_format.h"
#include "formats/mapped_file.h"
#include "quant/type_table.h"

namespace tinfer {

namespace {
// Everything parse() fills in; GgufFile::Impl adds the backing store.
struct Parsed {
  std::string name;  // file path (or "<memory>") for error messages
  uint32_t version = 0;
  size_t alignment = gguf::kDefaultAlignment;
  std::vector<std::pair<std::string, GgufValue>> kv;
  std::unordered_map<std::string, size_t> kv_index;
  std::vector<GgufTensor> tensors;
  std::unordered_map<std::string, size_t> tensor_index;
};
}  // namespace

struct GgufFile::Impl : Parsed {
  MappedFile map;              // backing store for open()
  std::vector<uint8_t> owned;  // backing store for from_bytes()
  std::shared_ptr<const void> backing;  // backing store for from_view()
};

int64_t GgufTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

using std::to_string;

// A bounds-checked little-endian cursor over the image; every failure names the file.
class Parser {
 public:
  Parser(const uint8_t* base, size_t size, const std::string& name) : base_(base), size_(size), name_(name) {}

  [[noreturn]] void error(const std::string& msg) const { fail("GGUF file '" + name_ + "': " + msg); }
  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  void need(uint64_t n, const std::string& what) const {
    if (n > remaining())
      error("truncated: " + what + " needs " + to_string(n) + " bytes at offset " + to_string(pos_) +
            " but the file has " + to_string(size_) + " bytes");
  }
  template <class T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const std::string& what, uint64_t max_len) {
    auto n = read<uint64_t>(what + " length");
    if (n > max_len) error(what + " length " + to_string(n) + " exceeds the limit of " + to_string(max_len));
    need(n, what + " (" + to_string(n) + " bytes)");
    std::string s(reinterpret_cast<const char*>(base_ + pos_), n);
    pos_ += n;
    return s;
  }

  GgufValue read_value(uint32_t type_id, const std::string& what, int depth) {
    if (!gguf::valid_type(type_id)) error(what + " has unknown value type " + to_string(type_id));
    GgufValue v;
    v.type = static_cast<GgufType>(type_id);
    switch (v.type) {
      case GgufType::UINT8:
        v.v = uint64_t{read<uint8_t>(what)};
        break;
      case GgufType::UINT16:
        v.v = uint64_t{read<uint16_t>(what)};
        break;
      case GgufType::UINT32:
        v.v = uint64_t{read<uint32_t>(what)};
        break;
      case GgufType::UINT64:
        v.v = read<uint64_t>(what);
        break;
      case GgufType::INT8:
        v.v = int64_t{read<int8_t>(what)};
        break;
      case GgufType::INT16:
        v.v = int64_t{read<int16_t>(what)};
        break;
      case GgufType::INT32:
        v.v = int64_t{read<int32_t>(what)};
        break;
      case GgufType::INT64:
        v.v = read<int64_t>(what);
        break;
      case GgufType::FLOAT32:
        v.v = double{read<float>(what)};
        break;
      case GgufType::FLOAT64:
        v.v = read<double>(what);
        break;
      case GgufType::BOOL: {
        uint8_t b = read<uint8_t>(what);
        if (b > 1) error(what + " is a bool with invalid byte value " + to_string(b));
        v.v = b == 1;
        break;
      }
      case GgufType::STRING:
        v.v = read_string(what, std::numeric_limits<uint64_t>::max());
        break;
      case GgufType::ARRAY: {
        if (depth >= gguf::kMaxArrayDepth)
          error(what + " nests arrays deeper than " + to_string(gguf::kMaxArrayDepth) + " levels");
        auto arr = std::make_shared<GgufArray>();
        uint32_t et = read<uint32_t>(what + " element type");
        if (!gguf::valid_type(et)) error(what + " is an array of unknown value type " + to_string(et));
        arr->elem_type = static_cast<GgufType>(et);
        auto n = read<uint64_t>(what + " element count");
        // Reject before reserving: n elements need at least n * min_elem_size bytes.
        if (n > remaining() / gguf::min_elem_size(arr->elem_type))
          error(what + " claims " + to_string(n) + " " + gguf::type_name(arr->elem_type) + " elements but only " +
                to_string(remaining()) + " bytes remain");
        // Each parsed value costs ~48 bytes in memory against 1 byte in the file: cap the total.
        values_ += n;
        if (values_ > gguf::kMaxMetadataValues)
          error("metadata holds more than " + to_string(gguf::kMaxMetadataValues) + " array values in total");
        arr->values.reserve(n);
        const std::string elem = what + " element";  // one label for all: token lists are long
        for (uint64_t i = 0; i < n; ++i) arr->values.push_back(read_value(et, elem, depth + 1));
        v.v = std::move(arr);
        break;
      }
    }
    return v;
  }

 private:
  const uint8_t* base_;
  size_t size_;
  size_t pos_ = 0;
  uint64_t values_ = 0;  // array elements parsed so far
  const std::string& name_;
};

// Magic, version and the two counts, each count checked against what the file could hold.
std::pair<uint64_t, uint64_t> parse_header(Parser& p, Parsed& f, const uint8_t* base, size_t size) {
  if (size < 4) p.error("too small to be a GGUF file (" + to_string(size) + " bytes)");
  if (std::memcmp(base, gguf::kMagic, 4) != 0) {
    static const char* kHex = "0123456789abcdef";
    std::string got;
    for (int i = 0; i < 4; ++i) got += std::string("\\x") + kHex[base[i] >> 4] + kHex[base[i] & 15];
    p.error("not a GGUF file (magic is \"" + got + "\", expected \"GGUF\")");
  }
  p.read<uint32_t>("magic");
  uint32_t version = p.read<uint32_t>("version");
  if (version == 1) p.error("GGUF version 1 is obsolete (32-bit counts) and not supported; re-convert the model");
  uint32_t swapped = __builtin_bswap32(version);
  if (version != 2 && version != 3 && swapped >= 1 && swapped <= 3)
    p.error("big-endian GGUF (version " + to_string(swapped) + ") is not supported; use a little-endian file");
  if (version != 2 && version != 3) p.error("unsupported GGUF version " + to_string(version) + " (supported: 2, 3)");
  f.version = version;

  auto n_tensors = p.read<uint64_t>("tensor count");
  auto n_kv = p.read<uint64_t>("metadata count");
  if (n_tensors > p.remaining() / gguf::kMinTensorInfoBytes)
    p.error("tensor count " + to_string(n_tensors) + " is impossible for a file of " + to_string(size) + " bytes");
  if (n_kv > p.remaining() / gguf::kMinKvBytes)
    p.error("metadata count " + to_string(n_kv) + " is impossible for a file of " + to_string(size) + " bytes");
  if (n_tensors * gguf::kMinTensorInfoBytes + n_kv * gguf::kMinKvBytes > p.remaining())
    p.error("tensor count " + to_string(n_tensors) + " and metadata count " + to_string(n_kv) +
            " cannot fit in a file of " + to_string(size) + " bytes");
  return {n_tensors, n_kv};
}

void parse_metadata(Parser& p, Parsed& f, uint64_t n_kv) {
  f.kv.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = p.read_string("metadata key #" + to_string(i), gguf::kMaxKeyLen);
    if (f.kv_index.count(key)) p.error("duplicate metadata key '" + key + "'");
    uint32_t t = p.read<uint32_t>("type of metadata '" + key + "'");
    GgufValue v = p.read_value(t, "metadata '" + key + "'", 0);
    f.kv_index.emplace(key, f.kv.size());
    f.kv.emplace_back(std::move(key), std::move(v));
  }
}

void read_alignment(Parser& p, Parsed& f) {
  if (auto it = f.kv_index.find("general.alignment"); it != f.kv_index.end()) {
    const GgufValue& a = f.kv[it->second].second;
    const uint64_t* u = std::get_if<uint64_t>(&a.v);
    if (!u) p.error(std::string("general.alignment must be an unsigned integer, got ") + gguf::type_name(a.type));
    if (*u == 0 || !std::has_single_bit(*u) || *u > gguf::kMaxAlignment)
      p.error("general.alignment " + to_string(*u) + " is not a power of two in [1, " + to_string(gguf::kMaxAlignment) +
              "]");
    f.alignment = static_cast<size_t>(*u);
  }
}

GgufTensor read_tensor_info(Parser& p, const Parsed& f, uint64_t i, size_t size) {
  GgufTensor t;
  t.name = p.read_string("tensor #" + to_string(i) + " name", gguf::kMaxTensorName);
  const std::string tn = "tensor '" + t.name + "'";
  if (t.name.empty()) p.error("tensor #" + to_string(i) + " has an empty name");
  if (f.tensor_index.count(t.name)) p.error("duplicate " + tn);
  auto n_dims = p.read<uint32_t>(tn + " dimension count");
  if (n_dims < 1 || n_dims > gguf::kMaxDims)
    p.error(tn + " has " + to_string(n_dims) + " dimensions (supported: 1.." + to_string(gguf::kMaxDims) + ")");
  int64_t elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    auto ne = p.read<uint64_t>(tn + " dimension " + to_string(d));
    if (ne < 1 || ne > uint64_t(std::numeric_limits<int64_t>::max()))
      p.error(tn + " dimension " + to_string(d) + " is " + to_string(ne) + " (must be >= 1 and < 2^63)");
    if (__builtin_mul_overflow(elements, int64_t(ne), &elements)) p.error(tn + " element count overflows 64 bits");
    t.shape.push_back(int64_t(ne));
  }
  auto type_id = p.read<uint32_t>(tn + " type");
  const TypeTraits* tr = find_type(static_cast<DType>(type_id));
  if (!tr) p.error(tn + " has unknown or unsupported type id " + to_string(type_id));
  t.type = tr->type;
  if (t.shape[0] % tr->block_size != 0)
    p.error(tn + " row length " + to_string(t.shape[0]) + " is not a multiple of the " + tr->name + " block size " +
            to_string(tr->block_size));
  uint64_t blocks = uint64_t(elements / tr->block_size), bytes = 0;
  const bool overflow = __builtin_mul_overflow(blocks, uint64_t(tr->block_bytes), &bytes);
  if (overflow || bytes > size)
    p.error(tn + " needs " + (overflow ? std::string("more than 2^64") : to_string(bytes)) +
            " bytes, more than the file size " + to_string(size));
  t.bytes = size_t(bytes);
  t.offset = p.read<uint64_t>(tn + " offset");
  if (t.offset % f.alignment != 0)
    p.error(tn + " offset " + to_string(t.offset) + " is not a multiple of the alignment " + to_string(f.alignment));
  return t;
}

// Tensor data pointers: inside the file, after the table, and never overlapping.
void place_tensors(Parser& p, Parsed& f, const uint8_t* base, size_t size) {
  // The data section starts at the next multiple of the alignment after the tensor table.
  const uint64_t data_start = (uint64_t(p.pos()) + f.alignment - 1) / f.alignment * f.alignment;
  for (GgufTensor& t : f.tensors) {
    // data_start <= size is implied when offset + bytes fit; checked without overflow.
    if (data_start > size || t.offset > size - data_start || t.bytes > size - data_start - t.offset)
      p.error("tensor '" + t.name + "' data runs past end of file (offset " + to_string(data_start) + " + " +
              to_string(t.offset) + " + " + to_string(t.bytes) + " bytes > file size " + to_string(size) + ")");
    t.data = base + data_start + t.offset;
  }
  // Tensors must not overlap (a crafted file could alias one tensor's bytes as another's).
  std::vector<const GgufTensor*> by_offset;
  for (const GgufTensor& t : f.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i - 1]->offset + by_offset[i - 1]->bytes > by_offset[i]->offset)
      p.error("tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap");
}

void parse(Parsed& f, const uint8_t* base, size_t size) {
  Parser p(base, size, f.name);
  const auto [n_tensors, n_kv] = parse_header(p, f, base, size);
  parse_metadata(p, f, n_kv);
  read_alignment(p, f);
  f.tensors.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t = read_tensor_info(p, f, i, size);
    f.tensor_index.emplace(t.name, f.tensors.size());
    f.tensors.push_back(std::move(t));
  }
  place_tensors(p, f, base, size);
}

[[noreturn]] void type_error(const std::string& file, const std::string& key, GgufType got, const char* want) {
  fail("GGUF file '" + file + "': metadata '" + key + "' is " + gguf::type_name(got) + ", expected " + want);
}

int64_t as_int(const GgufValue& v, const std::string& file, const std::string& key) {
  if (const auto* i = std::get_if<int64_t>(&v.v)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&v.v)) {
    if (*u > uint64_t(std::numeric_limits<int64_t>::max()))
      fail("GGUF file '" + file + "': metadata '" + key + "' value " + to_string(*u) + " does not fit int64");
    return int64_t(*u);
  }
  type_error(file, key, v.type, "an integer");
}

double as_float(const GgufValue& v, const std::string& file, const std::string& key) {
  if (const auto* d = std::get_if<double>(&v.v)) return *d;
  if (gguf::is_integer(v.type)) return double(as_int(v, file, key));
  type_error(file, key, v.type, "a number");
}

const GgufArray& as_array(const GgufValue& v, const std::string& file, const std::string& key) {
  if (const auto* a = std::get_if<std::shared_ptr<GgufArray>>(&v.v)) return **a;
  type_error(file, key, v.type, "an array");
}

}  // namespace

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->name = path;
  impl->map = MappedFile::open(path);
  parse(*impl, impl->map.data(), impl->map.size());
  return GgufFile(std::move(impl));
}

GgufFile GgufFile::from_bytes(const uint8_t* data, size_t size) {
  auto impl = std::make_unique<Impl>();
  impl->name = "<memory>";
  impl->owned.assign(data, data + size);
  parse(*impl, impl->owned.data(), impl->owned.size());
  return GgufFile(std::move(impl));
}

GgufFile GgufFile::from_view(const std::string& name, std::vector<std::pair<std::string, GgufValue>> kv,
                            std::vector<GgufTensor> tensors, std::shared_ptr<const void> backing) {
  auto impl = std::make_unique<Impl>();
  impl->name = name;
  impl->version = gguf::kVersion;
  impl->backing = std::move(backing);
  for (auto& [key, v] : kv) {
    check(impl->kv_index.emplace(key, impl->kv.size()).second, name + ": duplicate metadata key '" + key + "'");
    impl->kv.emplace_back(std::move(key), std::move(v));
  }
  for (GgufTensor& t : tensors) {
    const TypeTraits* tr = find_type(t.type);
    check(tr != nullptr && !t.shape.empty() && t.shape[0] % tr->block_size == 0,
          name + ": tensor '" + t.name + "' has an unusable type or shape");
    check(t.bytes == size_t(t.elements() / tr->block_size) * tr->block_bytes,
          name + ": tensor '" + t.name + "' holds " + to_string(t.bytes) + " bytes, its type and shape need " +
              to_string(t.elements() / tr->block_size * tr->block_bytes));
    check(impl->tensor_index.emplace(t.name, impl->tensors.size()).second,
          name + ": duplicate tensor '" + t.name + "'");
    impl->tensors.push_back(std::move(t));
  }
  return GgufFile(std::move(impl));
}

uint32_t GgufFile::version() const { return impl_->version; }
size_t GgufFile::alignment() const { return impl_->alignment; }
const std::vector<std::pair<std::string, GgufValue>>& GgufFile::metadata() const { return impl_->kv; }
const std::vector<GgufTensor>& GgufFile::tensors() const { return impl_->tensors; }

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = impl_->kv_index.find(key);
  return it == impl_->kv_index.end() ? nullptr : &impl_->kv[it->second].second;
}

const GgufTensor* GgufFile::tensor(const std::string& name) const {
  auto it = impl_->tensor_index.find(name);
  return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

std::optional<int64_t> GgufFile::get_int(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  return as_int(*v, impl_->name, key);
}

std::optional<double> GgufFile::get_float(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  return as_float(*v, impl_->name, key);
}

std::optional<bool> GgufFile::get_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* b = std::get_if<bool>(&v->v)) return *b;
  type_error(impl_->name, key, v->type, "a bool");
}

std::optional<std::string> GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&v->v)) return *s;
  type_error(impl_->name, key, v->type, "a string");
}

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return {};
  const GgufArray& a = as_array(*v, impl_->name, key);
  if (a.elem_type != GgufType::STRING) type_error(impl_->name, key + "[]", a.elem_type, "a string");
  std::vector<std::string> out;
  out.reserve(a.values.size());
  for (const GgufValue& e : a.values) out.push_back(std::get<std::string>(e.v));
  return out;
}

std::vector<double> GgufFile::get_float_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return {};
  const GgufArray& a = as_array(*v, impl_->name, key);
  std::vector<double> out;
  out.reserve(a.values.size());
  for (const GgufValue& e : a.values) out.push_back(as_float(e, impl_->name, key + "[]"));
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return {};
  const GgufArray& a = as_array(*v, impl_->name, key);
  std::vector<int64_t> out;
  out.reserve(a.values.size());
  for (const GgufValue& e : a.values) out.push_back(as_int(e, impl_->name, key + "[]"));
  return out;
}

}  // namespace tinfer

// Quantize-on-load: quantize_tensors into memory, then the tensors as a GgufFile view (see load_quantize.h).
#include "quantize/load_quantize.h"

#include <map>

#include "tinfer/error.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "quant/type_table.h"

namespace tinfer {
namespace {

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// The tensors kept in memory, one buffer each (a quantized tensor's buffer is the quantizer's own, moved in).
struct Buffers {
  std::vector<std::vector<uint8_t>> data;
};

class MemorySink final : public QuantizedSink {
 public:
  void open(const std::vector<std::pair<std::string, GgufValue>>& metadata, const GgufWriter& layout) override {
    metadata_ = metadata;
    const size_t align = layout.alignment();
    total_ = layout.header_bytes().size();
    for (size_t i = 0; i < layout.tensor_count(); ++i) {
      sizes_.push_back(layout.tensor_bytes(i));
      total_ += (sizes_.back() + align - 1) / align * align;
    }
    header_ = total_;
    for (size_t s : sizes_) header_ -= (s + align - 1) / align * align;
    written_ = header_;
  }
  void append(const uint8_t* data, size_t bytes, std::vector<uint8_t>* owned) override {
    check(buffers_->data.size() < sizes_.size() && bytes == sizes_[buffers_->data.size()],
          "quantize-on-load: tensor " + std::to_string(buffers_->data.size()) + " does not match its declaration");
    if (owned && owned->size() == bytes)
      buffers_->data.push_back(std::move(*owned));
    else
      buffers_->data.emplace_back(data, data + bytes);
    written_ += bytes;
  }
  void commit() override {
    check(buffers_->data.size() == sizes_.size(), "quantize-on-load: tensors missing");
    written_ = total_;
  }
  uint64_t bytes_written() const override { return written_; }
  uint64_t total_bytes() const override { return total_; }

  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::shared_ptr<Buffers> buffers_ = std::make_shared<Buffers>();

 private:
  std::vector<size_t> sizes_;
  uint64_t total_ = 0, header_ = 0, written_ = 0;
};

}  // namespace

std::string load_quant_type_names() {
  std::string names;
  for (DType t : quantize_target_types())
    if (!is_float(t)) names += (names.empty() ? "" : "|") + std::string(target_type_name(t));
  return names;
}

DType parse_load_quant_type(const std::string& name) {
  DType t = DType::F32;
  try {
    t = parse_target_type(name);
  } catch (const Error&) {
    fail("--quantize-on-load: unknown type '" + name + "' (expected one of " + load_quant_type_names() + ")");
  }
  check(!is_float(t), "--quantize-on-load: '" + name + "' is not a quantized type (expected one of " +
                          load_quant_type_names() + "; a float checkpoint loads as it is without the option)");
  return t;
}

void check_float_source(const Model& source, const std::string& option) {
  std::map<std::string, int> quantized;
  for (const GgufTensor& t : source.gguf().tensors())
    if (t.shape.size() >= 2 && !is_float(t.type)) ++quantized[type_traits(t.type).name];
  if (quantized.empty()) return;
  std::string kinds;
  for (const auto& [n, k] : quantized) kinds += (kinds.empty() ? "" : ", ") + n + " x" + std::to_string(k);
  fail(option + ": '" + source.path() + "' is already quantized (" + kinds +
       "); the option quantizes float checkpoints (F32/F16/BF16 GGUF or a Hugging Face directory). Load it "
       "without the option, or re-quantize it offline with `tinfer quantize` (which warns that the roundings add "
       "up)");
}

std::unique_ptr<Model> quantize_on_load(const Model& source, const QuantizeOptions& opts, QuantizeResult* result) {
  check(opts.method == QuantMethod::rtn, "quantize-on-load: only rtn (plain or importance-weighted) runs at load");
  check(!is_float(opts.target), "quantize-on-load: the target must be a quantized type");
  check_float_source(source);
  MemorySink sink;
  QuantizeResult res = quantize_tensors(source, opts, sink);
  std::vector<GgufTensor> tensors;
  const std::vector<GgufTensor>& src = source.gguf().tensors();
  uint64_t offset = 0;
  for (size_t i = 0; i < res.tensors.size(); ++i) {
    const TensorResult& r = res.tensors[i];
    const std::vector<uint8_t>& d = sink.buffers_->data[i];
    GgufTensor t;
    t.name = r.name, t.type = r.type, t.shape = r.shape, t.offset = offset, t.bytes = d.size(), t.data = d.data();
    offset += (d.size() + 31) / 32 * 32;
    tensors.push_back(std::move(t));
    check(src[i].name == r.name, "quantize-on-load: tensor order changed");
  }
  GgufFile view = GgufFile::from_view(source.path() + " (" + target_type_name(opts.target) + " at load)",
                                      std::move(sink.metadata_), std::move(tensors), sink.buffers_);
  auto model = Model::from_gguf(std::move(view), source.path());
  if (result) *result = std::move(res);
  return model;
}

}  // namespace tinfer

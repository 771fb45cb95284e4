// MemorySink (see memory_sink.h).
#include "quantize/memory_sink.h"

#include "tinfer/error.h"
#include "model/model.h"

namespace tinfer {

void MemorySink::open(const std::vector<std::pair<std::string, GgufValue>>& metadata, const GgufWriter& layout) {
  metadata_ = metadata;
  layout_ = layout;
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

void MemorySink::append(const uint8_t* data, size_t bytes, std::vector<uint8_t>* owned) {
  check(buffers_->data.size() < sizes_.size() && bytes == sizes_[buffers_->data.size()],
        "quantize in memory: tensor " + std::to_string(buffers_->data.size()) + " does not match its declaration");
  if (owned && owned->size() == bytes)
    buffers_->data.push_back(std::move(*owned));
  else
    buffers_->data.emplace_back(data, data + bytes);
  written_ += bytes;
}

void MemorySink::commit() {
  check(buffers_->data.size() == sizes_.size(), "quantize in memory: tensors missing");
  written_ = total_;
}

std::unique_ptr<Model> MemorySink::to_model(const Model& source, const QuantizeResult& res,
                                            const std::string& label) const {
  check(buffers_->data.size() == res.tensors.size(), "quantize in memory: the report and the tensors differ");
  std::vector<GgufTensor> tensors;
  const std::vector<GgufTensor>& src = source.gguf().tensors();
  uint64_t offset = 0;
  for (size_t i = 0; i < res.tensors.size(); ++i) {
    const TensorResult& r = res.tensors[i];
    const std::vector<uint8_t>& d = buffers_->data[i];
    GgufTensor t;
    t.name = r.name, t.type = r.type, t.shape = r.shape, t.offset = offset, t.bytes = d.size(), t.data = d.data();
    offset += (d.size() + 31) / 32 * 32;
    tensors.push_back(std::move(t));
    check(src[i].name == r.name, "quantize in memory: tensor order changed");
  }
  GgufFile view = GgufFile::from_view(source.path() + " (" + label + ")", metadata_, std::move(tensors), buffers_);
  return Model::from_gguf(std::move(view), source.path());
}

void MemorySink::replay(QuantizedSink& to) const {
  check(buffers_->data.size() == sizes_.size(), "quantize in memory: replay before commit");
  to.open(metadata_, layout_);
  for (const std::vector<uint8_t>& d : buffers_->data) to.append(d.data(), d.size(), nullptr);
  to.commit();
}

}  // namespace tinfer

// FloatModel: every tensor of a model dequantized to fp32 with the type table's reference routines,
// and back to an F32 GGUF image (calibration of quantized sources, fold tests).
#include "quantize/float_model.h"

#include "tinfer/error.h"
#include "model/model.h"
#include "quant/type_table.h"
#include "quantize/grid_quant.h"

namespace tinfer {

using quantize_detail::is_float_type;

int64_t FloatTensor::rows() const {
  int64_t r = 1;
  for (size_t i = 1; i < shape.size(); ++i) r *= shape[i];
  return r;
}

FloatModel load_float_model(const Model& model) {
  FloatModel m;
  m.config = model.config();
  for (const GgufTensor& t : model.gguf().tensors()) {
    FloatTensor f;
    f.shape = t.shape;
    f.source_type = t.type;
    f.data.resize(size_t(t.elements()));
    type_traits(t.type).to_float(t.data, f.data.data(), t.elements());
    if (t.shape.size() == 2 && !is_float_type(t.type)) m.requantized = true;
    m.tensors.emplace(t.name, std::move(f));
  }
  return m;
}

std::string layer_tensor(int64_t layer, const char* what) {
  return "blk." + std::to_string(layer) + "." + what + ".weight";
}

void copy_metadata(const GgufFile& from, GgufWriter& w) {
  for (const auto& [key, value] : from.metadata()) w.set(key, value);
}

std::vector<uint8_t> float_model_gguf(const FloatModel& m, const GgufFile& metadata) {
  GgufWriter w;
  copy_metadata(metadata, w);
  // Tensors in the source file's order (then any the source lacks), all F32.
  std::vector<const std::string*> order;
  for (const GgufTensor& t : metadata.tensors())
    if (m.tensors.count(t.name)) order.push_back(&t.name);
  for (const auto& [name, t] : m.tensors)
    if (!metadata.tensor(name)) order.push_back(&name);
  for (const std::string* name : order) {
    const FloatTensor& t = m.tensors.at(*name);
    check(int64_t(t.data.size()) == t.cols() * t.rows(), "float_model_gguf: tensor '" + *name + "' has " +
                                                             std::to_string(t.data.size()) + " values for its shape");
    w.add_tensor(*name, DType::F32, t.shape, t.data.data(), t.data.size() * sizeof(float));
  }
  return w.to_bytes();
}

}  // namespace tinfer

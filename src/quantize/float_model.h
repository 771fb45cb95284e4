// FloatModel: a model's tensors as fp32 by GGUF name, plus its configuration: the working copy that
// tinfer quantize transforms (AWQ / SmoothQuant fold scales into it) and then quantizes tensor by tensor.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "quant/dtype.h"

namespace tinfer {

class Model;
class GgufFile;
class GgufWriter;

struct FloatTensor {
  std::vector<int64_t> shape;  // GGUF order: shape[0] = row length (input features)
  DType source_type = DType::F32;
  std::vector<float> data;     // rows() x cols(), row-major
  int64_t cols() const { return shape.empty() ? 0 : shape[0]; }
  int64_t rows() const;        // product of shape[1..]
};

struct FloatModel {
  ModelConfig config;
  std::map<std::string, FloatTensor> tensors;
  bool requantized = false;  // some source tensor was already quantized (the result is a re-quantization)
};

// Dequantizes every tensor of `model` with the type table's reference routines.
FloatModel load_float_model(const Model& model);

// Names of the linear layers of block `layer` (GGUF names, e.g. "blk.3.attn_q.weight").
std::string layer_tensor(int64_t layer, const char* what);  // what: "attn_q", "attn_norm", "ffn_down", ...

// Copies every metadata key of `from` (architecture, tokenizer, ...) into `w`.
void copy_metadata(const GgufFile& from, GgufWriter& w);
// An in-memory GGUF image of `m`, every tensor F32, with the metadata of `metadata` (the source model's
// file): Model::from_gguf_bytes(image) runs the float model (calibration of a quantized source, tests).
std::vector<uint8_t> float_model_gguf(const FloatModel& m, const GgufFile& metadata);

}  // namespace tinfer
